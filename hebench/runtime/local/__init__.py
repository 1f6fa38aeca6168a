"""The local runtime: a process (or pool thread) per party on one machine."""
