"""Plaintext FedAvg: the baseline."""
