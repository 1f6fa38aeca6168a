"""Gradient-inversion attacks behind one signature."""
