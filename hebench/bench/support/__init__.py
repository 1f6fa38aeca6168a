"""Helpers shared by studies (not studies themselves: the registry does not look here)."""
