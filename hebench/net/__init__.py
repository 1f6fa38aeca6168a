"""Networking shared by every party: framed messages, TLS sockets, certificates."""
