"""Shared checks for RLWE adapters (CKKS, BFV): security level and value range."""

from __future__ import annotations

from typing import Any

import numpy as np

from hebench.crypto.base import EncryptedVector, HEAdapter, SchemeInfo
from hebench.crypto.fixed_point import FixedPointCodec
from hebench.crypto.params import BFVParams, CKKSParams, LatticeParams
from hebench.crypto.primes import batching_prime
from hebench.crypto.security import MAX_LOG_Q, lattice_security_bits
from hebench.errors import ParameterError, PrecisionError


class LatticeAdapter(HEAdapter):
    params: LatticeParams

    def _security_bits(self) -> int:
        n = self.params.ring_degree
        if n not in MAX_LOG_Q:
            raise ParameterError(
                f"ring_degree {n} is not a power of two from 1024 to 32768",
                f"use one of {sorted(MAX_LOG_Q)}",
            )
        return lattice_security_bits(n, self.params.log_q)


class CKKSAdapter(LatticeAdapter):
    """CKKS: approximate arithmetic on N/2 complex slots; we use the real parts."""

    scheme = "ckks"
    params_type = CKKSParams
    params: CKKSParams

    def __init__(self, params: dict | None = None) -> None:
        super().__init__(params)
        bits = self.params.coeff_mod_bits
        if len(bits) < 3 or any(b != self.params.scale_bits for b in bits[1:-1]):
            raise ParameterError(
                f"CKKS modulus chain {list(bits)} does not match scale_bits={self.params.scale_bits}",
                "use [first, scale_bits, ..., scale_bits, special] with at least one middle prime",
            )

    @property
    def slots(self) -> int:
        return self.params.ring_degree // 2

    @property
    def max_abs(self) -> float:
        """Largest |x| a weighted sum may reach before it wraps the first prime."""
        return float(2 ** (self.params.coeff_mod_bits[0] - self.params.scale_bits - 2))

    def _check_range(self, vec: np.ndarray) -> None:
        peak = float(np.max(np.abs(vec))) if vec.size else 0.0
        if peak > self.max_abs:
            raise PrecisionError(
                f"vector holds |x| = {peak:.4g}, above what this CKKS chain decodes ({self.max_abs:g})",
                "use a larger first prime relative to scale_bits, or scale the update down",
            )

    def precision(self) -> float:
        return 2.0 ** (22 - self.params.scale_bits)

    def info(self) -> SchemeInfo:
        return self._info(
            ring_degree=self.params.ring_degree,
            log_q=self.params.log_q,
            slots=self.slots,
            precision=self.precision(),
            security_bits=self._security_bits(),
        )

    def _add_chunks(self, a: EncryptedVector, b: EncryptedVector) -> tuple[list[Any], dict[str, Any]]:
        return [x + y for x, y in zip(a.chunks, b.chunks, strict=True)], {}


class BFVAdapter(LatticeAdapter):
    """BFV on integers: floats are quantised to fixed point; N slots per ciphertext."""

    scheme = "bfv"
    params_type = BFVParams
    params: BFVParams

    def __init__(self, params: dict | None = None) -> None:
        super().__init__(params)
        p = self.params
        if p.plain_modulus_bits > 60 or p.plain_modulus_bits <= p.value_bits + 1:
            raise ParameterError(
                f"plain_modulus_bits={p.plain_modulus_bits} must exceed value_bits+1={p.value_bits + 1} and be <= 60",
                "raise plain_modulus_bits or lower frac_bits / clip",
            )
        try:
            self.plain_modulus = batching_prime(p.plain_modulus_bits, p.ring_degree)
        except ValueError as err:
            raise ParameterError(f"{err}", "raise plain_modulus_bits (batching needs a prime = 1 mod 2N)") from None
        # Two limits on a weighted sum, both in the weight sum W the codec tracks (BFV has no per-slot headroom,
        # so max_summands moves neither): the plaintext modulus (|slot| <= W * 2**(value_bits-1) must stay below
        # t/2) and the noise budget (a plaintext weight multiplies the noise by W; past the budget decryption
        # returns garbage). The budget is estimated from the chain: log q (without SEAL's special prime) - log t
        # - log N - 1, a few bits under what SEAL measures for fresh ciphertexts.
        data_bits = sum(p.coeff_mod_bits[:-1]) if len(p.coeff_mod_bits) > 1 else p.coeff_mod_bits[0]
        noise_bits = data_bits - p.plain_modulus_bits - p.ring_degree.bit_length()
        modulus_limit = (self.plain_modulus // 2) // 2 ** (p.value_bits - 1)
        if noise_bits < 0:
            raise ParameterError(
                f"BFV modulus chain {list(p.coeff_mod_bits)} leaves no noise budget for a "
                f"{p.plain_modulus_bits}-bit plaintext modulus at ring degree {p.ring_degree}",
                "add bits to coeff_mod_bits (within the security bound) or lower plain_modulus_bits",
            )
        if 2**noise_bits < modulus_limit:
            limit, fix = (
                2**noise_bits,
                "lengthen coeff_mod_bits (each bit doubles the noise budget), or lower plain_modulus_bits or "
                "weight_bits (max_summands does not change it)",
            )
        else:
            limit, fix = (
                modulus_limit,
                "raise plain_modulus_bits (up to 60; each bit doubles the limit), or lower weight_bits, "
                "frac_bits or clip (max_summands does not change it)",
            )
        self.codec = FixedPointCodec(p, max_weight_sum=limit, headroom_fix=fix)

    @property
    def slots(self) -> int:
        return self.params.ring_degree

    def info(self) -> SchemeInfo:
        return self._info(
            ring_degree=self.params.ring_degree,
            log_q=self.params.log_q,
            slots=self.slots,
            precision=self.codec.precision(),
            security_bits=self._security_bits(),
        )

    def _check_range(self, vec: np.ndarray) -> None:
        self.codec.check_range(vec)

    def _check_state(self, state: dict[str, Any]) -> None:
        self.codec.check_state(state)

    def _add_chunks(self, a: EncryptedVector, b: EncryptedVector) -> tuple[list[Any], dict[str, Any]]:
        state = self.codec.combine(a.state, b.state)
        return [x + y for x, y in zip(a.chunks, b.chunks, strict=True)], state
