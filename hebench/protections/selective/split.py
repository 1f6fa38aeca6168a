"""A selectively encrypted update: a ciphertext part (masked coordinates) and a plaintext part.

On the wire an update's parts are the ciphertext blobs followed by
``plain_parts`` plaintext blobs (``plain`` adapter, float32); the aggregator
sums each kind with its own adapter.
"""

from __future__ import annotations

import numpy as np

from hebench.crypto.base import EncryptedVector, HEAdapter
from hebench.crypto.plain import PlainAdapter

PLAIN = PlainAdapter()


def split(vector: np.ndarray, mask: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """(values to encrypt, values sent in plaintext)."""
    if mask is None:
        return vector, vector[:0]
    return vector[mask], vector[~mask]


def join(encrypted: np.ndarray, plain: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
    if mask is None:
        return encrypted
    out = np.empty(mask.shape[0], dtype=np.float32)
    out[mask] = encrypted
    out[~mask] = plain
    return out


def encode_parts(adapter: HEAdapter, encrypted: list[EncryptedVector], plain: np.ndarray | None) -> tuple[bytes, ...]:
    blobs = [adapter.serialize(e) for e in encrypted]
    if plain is not None:
        blobs.append(PLAIN.serialize(PLAIN.encrypt(plain)))
    return tuple(blobs)


def parts_of(parts: tuple[bytes, ...], plain_parts: int) -> tuple[tuple[bytes, ...], tuple[bytes, ...]]:
    """(ciphertext blobs, plaintext blobs) of a message."""
    cut = len(parts) - plain_parts
    return parts[:cut], parts[cut:]
