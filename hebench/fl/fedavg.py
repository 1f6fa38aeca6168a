"""Federated averaging over encrypted updates: sum_i (n_i / sum n) * update_i, per vector."""

from __future__ import annotations

from collections.abc import Sequence

from hebench.crypto.base import EncryptedVector, HEAdapter
from hebench.errors import PartyError


def fedavg_weights(counts: dict[int, int]) -> dict[int, float]:
    total = sum(counts.values())
    if total <= 0:
        raise PartyError("clients reported no training samples", "give every client at least one sample")
    return {i: n / total for i, n in counts.items()}


def weighted_sum(
    adapter: HEAdapter, updates: dict[int, Sequence[EncryptedVector]], weights: dict[int, float]
) -> list[EncryptedVector]:
    """Weight each client's vectors by a plaintext scalar and add them, with public keys only."""
    total: list[EncryptedVector] | None = None
    for i, vectors in updates.items():
        weighted = [adapter.multiply_plain(v, weights[i]) for v in vectors]
        if total is None:
            total = weighted
        elif len(total) != len(weighted):
            raise PartyError(f"client {i} sent {len(weighted)} vectors, others {len(total)}", "use one packing per run")
        else:
            total = [adapter.add(a, b) for a, b in zip(total, weighted, strict=True)]
    if total is None:
        raise PartyError("no updates to aggregate", "select at least one client per round")
    return total
