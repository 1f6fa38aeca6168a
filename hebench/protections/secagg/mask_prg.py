"""Pseudo-random masks from a shared key, for secure aggregation: Flower's generator, or one keyed by 128 bits.

``flwr-32bit`` is flwr 1.41's ``pseudo_rand_gen``: it XOR-folds the key to 32 bits and seeds
numpy's ``RandomState`` with them. The key it folds is the shared key's url-safe base64 *text*, whose
bytes are ASCII: no byte of the fold ever sets its top bit, so a mask has at most 2^28 possible values
(a property of Flower 1.41 itself; ``SEED_BITS`` records 28). ``full-key`` keys
numpy's Philox-4x64 counter generator with a 128-bit key derived from the whole
256-bit HKDF output. Neither is a
cryptographic PRG (a deployment would use AES-CTR or ChaCha20); full-key at least leaves no
seed small enough to enumerate.

Both are drawn as streams (:func:`mask_stream`): consecutive ``take(count)`` calls give the whole mask's
values in order, bit for bit, so a party expands a mask chunk by chunk at the offsets of a streamed update
and never holds a model-sized mask.
"""

from __future__ import annotations

import base64
from collections.abc import Callable

import numpy as np
from flwr.common.secure_aggregation.secaggplus_utils import pseudo_rand_gen

MaskGenerator = Callable[[bytes, int, int], np.ndarray]  # (key, modulus, length) -> uint64 values in [0, modulus)


def flwr_32bit_mask(key: bytes, modulus: int, length: int) -> np.ndarray:
    """flwr 1.41's mask: ``RandomState`` seeded with the 32-bit XOR-fold of ``key`` (values in [0, modulus - 2]).

    ``key`` is base64 text, so the fold carries 28 bits of entropy."""
    return pseudo_rand_gen(key, modulus, [(length,)])[0].astype(np.uint64)


def full_key_mask(key: bytes, modulus: int, length: int) -> np.ndarray:
    """Philox-4x64 with a 128-bit key that ``SeedSequence`` derives from all of the key material
    (``key``: Flower's base64 shared key, 256 bits)."""
    return _philox(key).integers(0, modulus, length, dtype=np.uint64)


class MaskStream:
    """One mask drawn in order: ``take(count)`` is the next ``count`` values of the whole mask (uint64).

    Both generators draw each value from the bit generator's own state (RandomState's 32-bit words, Philox's
    buffered words), so the concatenation of any sequence of ``take`` calls equals one call for the total."""

    def __init__(self, prg: str, key: bytes, modulus: int) -> None:
        self.modulus, self.offset = modulus, 0
        if prg == "flwr-32bit":
            self._legacy: np.random.RandomState | None = np.random.RandomState(_fold32(key))
            self._gen: np.random.Generator | None = None
        else:
            self._legacy, self._gen = None, _philox(key)

    def take(self, count: int) -> np.ndarray:
        self.offset += count
        if self._legacy is not None:  # pseudo_rand_gen's draw: values in [0, modulus - 2]
            return self._legacy.randint(0, self.modulus - 1, count, dtype=np.int64).astype(np.uint64)
        assert self._gen is not None
        return self._gen.integers(0, self.modulus, count, dtype=np.uint64)


def mask_stream(prg: str, key: bytes, modulus: int) -> MaskStream:
    """The mask of ``key`` under generator ``prg`` (a name of :data:`MASK_GENERATORS`), drawn chunk by chunk."""
    if prg not in MASK_GENERATORS:
        raise ValueError(f"unknown mask generator {prg!r}")
    return MaskStream(prg, key, modulus)


def _fold32(key: bytes) -> int:
    """flwr 1.41's seed: the XOR of ``key``'s little-endian 32-bit words."""
    seed = 0
    for i in range(0, len(key) - len(key) % 4, 4):
        seed ^= int.from_bytes(key[i : i + 4], "little")
    return seed


def _philox(key: bytes) -> np.random.Generator:
    return np.random.Generator(np.random.Philox(np.random.SeedSequence(int.from_bytes(_key_bytes(key), "little"))))


def _key_bytes(key: bytes) -> bytes:
    """The 32 raw bytes behind Flower's url-safe base64 shared key (or ``key`` itself when not base64)."""
    try:
        raw = base64.urlsafe_b64decode(key)
    except ValueError:
        raw = key
    return raw if len(raw) >= 16 else key


MASK_GENERATORS: dict[str, MaskGenerator] = {"flwr-32bit": flwr_32bit_mask, "full-key": full_key_mask}
