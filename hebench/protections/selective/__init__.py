"""Selective parameter encryption: which coordinates of an update to encrypt."""
