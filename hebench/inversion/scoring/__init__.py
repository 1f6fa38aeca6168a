"""Scores of a reconstruction against the private original, and DP's bound."""
