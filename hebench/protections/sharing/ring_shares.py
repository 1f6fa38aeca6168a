"""Additive n-of-n secret sharing over the 64-bit ring (uint64 arithmetic wraps modulo 2^64).

An update is quantised to signed integers (a value beyond ±clip is refused, as the compact HE
adapters refuse theirs, never clipped silently), multiplied by the client's sample count (so the
shares' sum is the integer FedAvg numerator) and split into K shares: K - 1 uniformly random
words (from the OS's CSPRNG) and one that makes them add up. Any K - 1 shares are uniform and
independent of the update; all K add up to it.
"""

from __future__ import annotations

import os

import numpy as np

from hebench.crypto.quantize import Quantizer
from hebench.errors import PartyError, PrecisionError
from hebench.protections.sharing.params import SecretSharingParams


def quantizer(params: SecretSharingParams) -> Quantizer:
    return Quantizer(params.bits, params.clip, stochastic=True)


def encode(vector: np.ndarray, samples: int, params: SecretSharingParams, rng: np.random.Generator) -> np.ndarray:
    """``samples * quantise(vector)`` as ring elements (two's complement); a value beyond ±clip is refused."""
    check_range(vector, params)
    ints = quantizer(params).quantize(vector, rng) * np.int64(samples)
    return ints.view(np.uint64)


def check_range(vector: np.ndarray, params: SecretSharingParams) -> None:
    """Raise :class:`PrecisionError` if a value lies beyond ±clip (or is not finite): it cannot be encoded."""
    values = np.asarray(vector, dtype=np.float64)
    peak = float(np.max(np.abs(values))) if values.size else 0.0
    if not np.isfinite(peak) or peak > params.clip:
        raise PrecisionError(
            f"secret-sharing: the update holds |x| = {peak:.4g}, beyond the range clip = {params.clip:g}",
            "raise params.clip (a larger quantisation step: less precision), or scale the update",
        )


def decode(total: np.ndarray, samples_total: int, params: SecretSharingParams) -> np.ndarray:
    """The FedAvg behind a reconstructed sum of encoded updates whose sample counts add to ``samples_total``."""
    return total.view(np.int64).astype(np.float64) * quantizer(params).step / samples_total


def random_words(length: int) -> np.ndarray:
    return np.frombuffer(os.urandom(8 * length), dtype=np.uint64).copy()


def split(secret: np.ndarray, parties: int) -> list[np.ndarray]:
    """``parties`` shares of ``secret`` (uint64): all but the first uniformly random, summing to it mod 2^64."""
    others = [random_words(len(secret)) for _ in range(parties - 1)]
    first = secret.copy()
    for share in others:
        first -= share  # wraps modulo 2^64
    return [first, *others]


def combine(shares: list[np.ndarray]) -> np.ndarray:
    """The secret behind all of its shares (or the sum of secrets behind the sums of their shares)."""
    total = np.zeros_like(shares[0], dtype=np.uint64)
    for share in shares:
        total += share
    return total


def check_headroom(samples_total: int, params: SecretSharingParams) -> None:
    """Refuse a sum whose weighted integers could leave the signed 64-bit range."""
    if samples_total > params.max_weight_sum():
        raise PartyError(
            f"secret-sharing: {samples_total} samples x 2^{params.bits - 1} levels overflow the 64-bit ring",
            "lower params.bits",
        )
