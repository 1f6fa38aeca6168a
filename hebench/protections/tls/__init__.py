"""TLS on every party's channels (``transport: tls``): a modifier of any mode, against the network observer."""
