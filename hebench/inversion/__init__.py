"""Gradient inversion: what the aggregator can reconstruct from what it received."""
