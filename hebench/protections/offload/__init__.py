"""NIC offload: an encryption engine that holds the keys, on its own cores or on a DPU."""
