"""Differential privacy: client- and sample-level noise, its ledger and attacker view."""
