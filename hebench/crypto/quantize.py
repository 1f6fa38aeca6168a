"""b-bit fixed-point quantisation with an explicit clip range, and packing several values per coefficient.

A value x in [-clip, clip] becomes the integer q = round(x / step), step = clip / (2^(b-1) - 1),
so |q| <= 2^(b-1) - 1. Stochastic rounding (floor(x / step + U), U uniform on [0, 1)) is
unbiased, with |q step - x| < step; nearest rounding has |q step - x| <= step / 2. Packed
values are stored offset by 2^(b-1) - 1 (non-negative, so sums never borrow across fields):
coefficient j holds the values j, j + N, j + 2N, ... in consecutive ``field_bits``-bit fields.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Quantizer:
    bits: int
    clip: float
    stochastic: bool = True

    @property
    def levels(self) -> int:
        """Largest |q|."""
        return 2 ** (self.bits - 1) - 1

    @property
    def step(self) -> float:
        return self.clip / self.levels

    @property
    def max_error(self) -> float:
        """Bound on |dequantize(quantize(x)) - x| for one value."""
        return self.step if self.stochastic else self.step / 2

    def quantize(self, vec: np.ndarray, rng: np.random.Generator, bound: int | None = None) -> np.ndarray:
        """Integers of ``vec / step``; clamped to ``bound`` (default ``levels``: the clamp only guards round-off)."""
        scaled = np.asarray(vec, dtype=np.float64) / self.step
        if self.stochastic:
            ints = np.floor(scaled + rng.random(scaled.shape))
        else:
            ints = np.rint(scaled)
        limit = self.levels if bound is None else bound
        return np.clip(ints, -limit, limit).astype(np.int64)


def pack(ints: np.ndarray, ring_degree: int, fields: int, field_bits: int, offset: int) -> np.ndarray:
    """Offset integers (at most ``ring_degree * fields``) packed into ``ring_degree`` coefficients."""
    padded = np.zeros(ring_degree * fields, dtype=np.uint64)
    padded[: ints.size] = (ints + offset).astype(np.uint64)
    padded[ints.size :] = offset
    grid = padded.reshape(fields, ring_degree)
    shifts = (np.arange(fields, dtype=np.uint64) * np.uint64(field_bits))[:, None]
    return np.bitwise_or.reduce(grid << shifts, axis=0)


def unpack(coeffs: np.ndarray, fields: int, field_bits: int) -> np.ndarray:
    """Inverse of :func:`pack` for sums: every field as a non-negative int64, in value order."""
    shifts = (np.arange(fields, dtype=np.uint64) * np.uint64(field_bits))[:, None]
    mask = np.uint64((1 << field_bits) - 1)
    return ((coeffs.astype(np.uint64)[None, :] >> shifts) & mask).astype(np.int64).reshape(-1)
