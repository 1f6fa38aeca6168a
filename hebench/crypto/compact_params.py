"""Parameters of the compact SEAL adapters, and the smallest secure layout that fits them.

A compact BFV ciphertext holds one quantised value per field, ``values_per_slot``
fields per plaintext coefficient (no batching: additions and plaintext-scalar
products act coefficient-wise, so the plain modulus is a power of two). The
layout is derived, never guessed:

- field width ``f``: the fewest bits with ``floor((2^f - 1) / (2^b - 2)) >= max_summands``,
  so a weighted sum whose integer weights total ``max_weight_sum`` cannot carry
  into the next field (values are stored offset, non-negative);
- plain modulus ``t = 2^(f * values_per_slot)``;
- one coefficient prime ``q`` (no special prime: nothing is relinearised or
  rotated) with ``2^(bits(q)-1) >= 2 t (W (B + 1))`` where ``W`` is the weight
  sum and ``B`` the worst-case fresh noise of one ciphertext (SEAL's noise is
  a centred binomial bounded by 21; public-key encryption adds the ``e u`` and
  ``e2 s`` terms, ``2 N B``);
- the smallest ring degree whose HomomorphicEncryption.org bound admits ``bits(q)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from pydantic import Field

from hebench.crypto.params import AdapterParams
from hebench.crypto.security import MAX_LOG_Q
from hebench.errors import ParameterError

NOISE_BOUND = 21  # SEAL samples fresh errors from a centred binomial on [-21, 21] (6 sigma clipped Gaussian: 19)
MAX_PRIME_BITS = 60  # SEAL's limit for one coefficient prime
MAX_VALUES_PER_SLOT = 8


class CompactParams(AdapterParams):
    """Shared by ``seal-bfv`` and ``seal-ckks``; the derived layout is in ``info().params``."""

    bits: int = Field(16, ge=2, le=30)  # quantised value size, sign included (precision target for CKKS)
    clip: float = Field(1.0, gt=0)  # values must lie in [-clip, clip] (clients scale tensors that outgrow it)
    max_clipped: float = Field(1e-4, ge=0, le=1)  # share of a round's values that may saturate at ±clip (counted)
    max_summands: int = Field(64, ge=1)  # headroom: integer weights over a common denominator may total this
    security_level: Literal[128, 192, 256] = 128
    ring_degree: int | None = None  # default: the smallest secure one
    modulus_bits: int | None = Field(None, ge=14, le=MAX_PRIME_BITS)  # default: the smallest sufficient
    public_encryption: bool = False  # size the noise for public-key encryption (parties without the secret key)


class SealBFVParams(CompactParams):
    rounding: Literal["stochastic", "nearest"] = "stochastic"
    values_per_slot: int | None = Field(None, ge=1, le=MAX_VALUES_PER_SLOT)  # default: what minimises bytes


class SealCKKSParams(CompactParams):
    scale_bits: int | None = Field(None, ge=10, le=55)  # default: enough for the precision of `bits`


@dataclass(frozen=True)
class CompactLayout:
    """What a compact parameter set derives to."""

    ring_degree: int
    modulus_bits: int
    plain_bits: int  # BFV: log2 t; CKKS: 0
    field_bits: int  # BFV: bits per packed value; CKKS: 0
    values_per_slot: int  # values per coefficient (BFV) or per slot (CKKS: 1, with N/2 slots)
    max_weight_sum: int  # exact: a larger integer weight total is refused before it overflows
    scale_bits: int  # CKKS only (0 for BFV)
    noise_per_weight: int  # worst-case noise one unit of weight adds

    @property
    def bits_per_value(self) -> float:
        per_coefficient = self.modulus_bits / self.values_per_slot
        return per_coefficient if self.scale_bits == 0 else 2 * per_coefficient  # CKKS: N/2 slots


def fresh_noise(ring_degree: int, public: bool) -> int:
    """Worst-case |noise| of one fresh ciphertext coefficient, encoding rounding included."""
    return NOISE_BOUND * (2 * ring_degree + 1) + 1 if public else NOISE_BOUND + 1


def field_bits(bits: int, summands: int) -> int:
    """Fewest field bits holding a weight total of ``summands`` of offset b-bit values without carry."""
    f = bits
    while (2**f - 1) // (2**bits - 2) < summands:
        f += 1
    return f


def _candidates(p: CompactParams) -> list[int]:
    return [p.ring_degree] if p.ring_degree else sorted(MAX_LOG_Q)


def _modulus_for(p: CompactParams, ring_degree: int, needed_bits: int) -> int | None:
    """Modulus bits to use on this ring, or None when they do not fit (or are not secure, unless the ring was given)."""
    bits = p.modulus_bits or needed_bits
    if bits < needed_bits or bits > MAX_PRIME_BITS or bits <= math.log2(2 * ring_degree) + 1:
        return None  # too small, too large for one prime, or no NTT prime of that size
    if p.ring_degree is None and MAX_LOG_Q[ring_degree][p.security_level] < bits:
        return None  # an explicit ring is checked (and refused unless allow_insecure) by the adapter
    return bits


def bfv_layout(p: SealBFVParams) -> CompactLayout:
    """The smallest secure BFV layout: fewest modulus bits per value, then the smallest ring."""
    f = field_bits(p.bits, p.max_summands)
    max_ws = (2**f - 1) // (2**p.bits - 2)
    best: CompactLayout | None = None
    for vps in [p.values_per_slot] if p.values_per_slot else range(1, MAX_VALUES_PER_SLOT + 1):
        for n in _candidates(p):
            noise = fresh_noise(n, p.public_encryption)
            needed = f * vps + math.ceil(math.log2(max_ws * (noise + 1))) + 2
            bits = _modulus_for(p, n, needed)
            if bits is None:
                continue
            layout = CompactLayout(n, bits, f * vps, f, vps, max_ws, 0, noise)
            if best is None or (layout.bits_per_value, n) < (best.bits_per_value, best.ring_degree):
                best = layout
            break  # the smallest ring that fits this packing
    if best is None:
        raise ParameterError(
            f"no secure BFV layout holds {p.bits}-bit values with headroom for {p.max_summands} summands "
            f"(modulus_bits={p.modulus_bits}, ring_degree={p.ring_degree}, values_per_slot={p.values_per_slot})",
            "lower bits or max_summands, or leave modulus_bits / ring_degree / values_per_slot unset",
        )
    return best


def ckks_step(p: CompactParams) -> float:
    """Quantisation step of a b-bit value in [-clip, clip]: the precision target CKKS matches."""
    return p.clip / (2 ** (p.bits - 1) - 1)


def ckks_layout(p: SealCKKSParams) -> CompactLayout:
    """The smallest secure CKKS layout whose worst-case error is within one b-bit step.

    A slot's error is at most ``N (B + 1/2) / 2^scale`` per unit of weight (canonical embedding of
    the noise and encoding rounding); a coefficient of the weighted sum stays below
    ``W (clip 2^scale + N (B + 1))``, which must not reach q/2.
    """
    for n in _candidates(p):
        noise = fresh_noise(n, p.public_encryption)
        scale = p.scale_bits or math.ceil(math.log2(n * (noise + 0.5) / ckks_step(p)))
        needed = math.ceil(math.log2(p.max_summands * (p.clip * 2.0**scale + n * (noise + 1)))) + 2
        bits = _modulus_for(p, n, needed)
        if bits is not None:
            return CompactLayout(n, bits, 0, 0, 1, p.max_summands, scale, noise)
    raise ParameterError(
        f"no secure CKKS layout reaches {p.bits}-bit precision with headroom for {p.max_summands} summands",
        "lower bits or max_summands, or leave modulus_bits / ring_degree / scale_bits unset",
    )
