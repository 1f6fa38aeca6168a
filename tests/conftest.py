"""Shared fixtures: fast parameters for slow adapters, installed adapter names."""

from __future__ import annotations

from pathlib import Path

import pytest

from hebench.crypto.registry import list_adapters
from hebench.data.cache import FEMNIST_SAMPLE

COMPACT = {"clip": 4.0, "public_encryption": True}  # shared tests encrypt values up to 4, some with public keys
FAST_PARAMS: dict[str, dict] = {"paillier": {"key_bits": 2048}, "seal-bfv": COMPACT, "seal-ckks": COMPACT}
INSTALLED = [s.name for s in list_adapters() if s.available]


def fast_params(name: str) -> dict:
    return dict(FAST_PARAMS.get(name, {}))


@pytest.fixture(scope="session")
def femnist_sample() -> Path:
    """The real FEMNIST sample shipped in datasets/femnist-sample (5 writers, LEAF JSON)."""
    return FEMNIST_SAMPLE
