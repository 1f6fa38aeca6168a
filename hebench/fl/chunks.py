"""How an update is cut into streamed chunks: every party of a round cuts it the same way.

A chunk is one encrypted vector of at most ``chunk_values`` values, rounded down to whole ciphertexts
(a multiple of the adapter's slots, at least one ciphertext), never across a piece (per-layer packing
keeps each tensor in its own ciphertexts). Chunk k of every client covers the same coordinates, so the
aggregator adds chunk k into its running sum as it arrives. The ``plain`` adapter has no ciphertexts:
its chunks are exactly ``chunk_values`` long.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from hebench.crypto.base import HEAdapter

DEFAULT_CHUNK_VALUES = 65536


def values_per_chunk(adapter: HEAdapter, chunk_values: int) -> int:
    """``chunk_values`` rounded down to whole ciphertexts of ``adapter`` (one at least); as given for ``plain``."""
    if adapter.scheme == "none":
        return max(1, chunk_values)
    slots = adapter.slots
    return max(slots, chunk_values - chunk_values % slots)


def chunks_of(pieces: list[np.ndarray], per_chunk: int) -> Iterator[np.ndarray]:
    """Each piece's consecutive slices of ``per_chunk`` values (views, no copies), in order; empty pieces skipped."""
    for piece in pieces:
        for start in range(0, len(piece), per_chunk):
            yield piece[start : start + per_chunk]
