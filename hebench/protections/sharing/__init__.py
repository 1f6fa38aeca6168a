"""Additive secret sharing to K non-colluding share holders."""
