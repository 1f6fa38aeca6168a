"""Shared fixtures: fast parameters for slow adapters, installed adapter names, the pids of a run's parties, one
torch thread for small models."""

from __future__ import annotations

import multiprocessing as mp
from pathlib import Path

import pytest

from hebench.crypto.registry import list_adapters
from hebench.data.cache import FEMNIST_SAMPLE

COMPACT = {"clip": 4.0, "public_encryption": True}  # shared tests encrypt values up to 4, some with public keys
FAST_PARAMS: dict[str, dict] = {"paillier": {"key_bits": 2048}, "seal-bfv": COMPACT, "seal-ckks": COMPACT}
INSTALLED = [s.name for s in list_adapters() if s.available]


def fast_params(name: str) -> dict:
    return dict(FAST_PARAMS.get(name, {}))


@pytest.fixture(scope="module")
def one_torch_thread():
    """Small models on a shared 2-core machine: one torch thread (two spin against each other under load); a module
    asks with ``pytestmark = pytest.mark.usefixtures("one_torch_thread")``."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="session")
def femnist_sample() -> Path:
    """The real FEMNIST sample shipped in datasets/femnist-sample (5 writers, LEAF JSON)."""
    return FEMNIST_SAMPLE


@pytest.fixture
def party_pids(monkeypatch):
    """Process name -> pid of every party the runner starts (recorded as each starts)."""
    pids: dict[str, int] = {}
    process = mp.get_context("spawn").Process
    real_start = process.start

    def start(self) -> None:
        real_start(self)
        pids[self.name] = self.pid

    monkeypatch.setattr(process, "start", start)
    return pids
