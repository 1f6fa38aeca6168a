"""Federated averaging with one OS process per party, over real loopback sockets."""
