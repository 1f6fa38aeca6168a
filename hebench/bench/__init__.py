"""Benchmark studies: each module registers its studies (``registry.study``); ``python -m hebench.bench`` runs them."""
