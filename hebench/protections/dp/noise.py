"""Where a client's DP noise comes from: a secret stream the aggregator cannot regenerate, or (debugging only)
a stream derived from public values.

:class:`SecretNoise` keys ChaCha20 (the ``cryptography`` package) with 256 bits from the OS CSPRNG
(``os.urandom``), fresh for every source; the key never leaves the client's memory and is never recorded.
Uniforms from the keystream become Gaussians by Box–Muller, and every value is the sum of four such
Gaussians halved (σ unchanged): Opacus' ``secure_mode`` recipe (Holohan et al., arXiv:2107.10138, §5.1)
against floating-point attacks on the Gaussian mechanism. This replaces Opacus' ``secure_mode``, whose
``torchcsprng`` has no build for the torch hebench runs on.

:class:`SeededNoise` draws from numpy's generator seeded by (suite seed, round, client): anyone holding
the suite (the aggregator does) regenerates it and subtracts it. Only ``dp: {reproducible_noise: true}``
uses it, and a run that does says so in a ``security_note`` record (:func:`reproducible_noise_note`, written by
the runner for every runtime) and in its labels.
"""

from __future__ import annotations

import math
import os
from typing import Protocol

import numpy as np
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms

from hebench.results.records import SecurityNoteRecord

SUMMED = 4  # Gaussians summed per value (halved): Opacus' secure_mode uses 2n with n = 2
CLIENT_STREAM, SAMPLE_STREAM = 0xD1FF, 0x5A3D  # SeededNoise streams: client-level and sample-level noise


class NoiseSource(Protocol):
    """Gaussian noise for a DP mechanism."""

    def gaussian(self, std: float, shape: tuple[int, ...]) -> np.ndarray:
        """N(0, std²) values of ``shape`` (float64)."""
        ...


class SecretNoise:
    """Gaussian noise from a ChaCha20 keystream keyed by the OS CSPRNG: secret to this process."""

    def __init__(self) -> None:
        key, nonce = os.urandom(32), os.urandom(16)
        self._stream = Cipher(algorithms.ChaCha20(key, nonce), mode=None).encryptor()
        del key

    def uniforms(self, count: int) -> np.ndarray:
        """``count`` uniform values in (0, 1], 53 random bits each."""
        words = np.frombuffer(self._stream.update(bytes(8 * count)), dtype=np.uint64)
        return ((words >> np.uint64(11)).astype(np.float64) + 1.0) * 2.0**-53

    def standard_normal(self, count: int) -> np.ndarray:
        """``count`` N(0, 1) values by Box–Muller (two per pair of uniforms)."""
        pairs = (count + 1) // 2
        u = self.uniforms(2 * pairs)
        radius = np.sqrt(-2.0 * np.log(u[:pairs]))
        angle = 2.0 * math.pi * u[pairs:]
        return np.concatenate([radius * np.cos(angle), radius * np.sin(angle)])[:count]

    def gaussian(self, std: float, shape: tuple[int, ...]) -> np.ndarray:
        count = math.prod(shape)
        if std == 0 or count == 0:
            return np.zeros(shape)
        summed = self.standard_normal(SUMMED * count).reshape(SUMMED, count).sum(axis=0)
        return (summed * (std / math.sqrt(SUMMED))).reshape(shape)


class SeededNoise:
    """Gaussian noise from a seeded numpy generator: reproducible, and so regenerable by whoever has the seed."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng

    @classmethod
    def public(cls, seed: int, round_index: int, client: int, stream: int) -> SeededNoise:
        """The stream of one client in one round, derived from the suite's seed (``reproducible_noise`` only)."""
        return cls(np.random.default_rng([seed, round_index, client, stream]))

    def gaussian(self, std: float, shape: tuple[int, ...]) -> np.ndarray:
        return self.rng.normal(0.0, std, size=shape)


def reproducible_noise_note(config: str) -> SecurityNoteRecord:
    """The record a configuration with ``dp.reproducible_noise`` carries: it has no DP against the aggregator."""
    return SecurityNoteRecord(
        config=config,
        role="clients",
        door="dp",
        problem=(
            "dp.reproducible_noise is on: every client's DP noise is derived from the suite's seed, round and client "
            "index, which the aggregator holds, so it can regenerate the noise and remove it; this configuration "
            "has NO differential privacy against the aggregator (debugging only)"
        ),
    )
