"""Optimisers that advance many independent restarts at once, each with its own state."""
