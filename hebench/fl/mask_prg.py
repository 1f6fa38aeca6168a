"""Pseudo-random masks from a shared key, for secure aggregation: Flower's generator, or one keyed by 128 bits.

``flwr-32bit`` is flwr 1.41's ``pseudo_rand_gen``: it XOR-folds the key to 32 bits and seeds
numpy's ``RandomState`` with them. The key it folds is the shared key's url-safe base64 *text*, whose
bytes are ASCII: no byte of the fold ever sets its top bit, so a mask has at most 2^28 possible values
(a property of Flower 1.41 itself; ``SEED_BITS`` records 28). ``full-key`` keys
numpy's Philox-4x64 counter generator with a 128-bit key derived from the whole
256-bit HKDF output. Neither is a
cryptographic PRG (a deployment would use AES-CTR or ChaCha20); full-key at least leaves no
seed small enough to enumerate.
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
    raw = _key_bytes(key)
    gen = np.random.Generator(np.random.Philox(np.random.SeedSequence(int.from_bytes(raw, "little"))))
    return gen.integers(0, modulus, length, dtype=np.uint64)


def _key_bytes(key: bytes) -> bytes:
    """The 32 raw bytes behind Flower's url-safe base64 shared key (or ``key`` itself when not base64)."""
    try:
        raw = base64.urlsafe_b64decode(key)
    except ValueError:
        raw = key
    return raw if len(raw) >= 16 else key


MASK_GENERATORS: dict[str, MaskGenerator] = {"flwr-32bit": flwr_32bit_mask, "full-key": full_key_mask}
