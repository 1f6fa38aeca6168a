"""Explicit, validated parameter sets shared by the adapters."""

from __future__ import annotations

import math
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from hebench.errors import ParameterError

P = TypeVar("P", bound="AdapterParams")


class AdapterParams(BaseModel):
    """Base of every adapter's parameters: frozen, no unknown keys."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    allow_insecure: bool = False
    max_summands: int = 32  # how many weighted vectors one aggregate may sum

    @classmethod
    def parse(cls: type[P], adapter: str, raw: dict[str, Any] | None) -> P:
        try:
            return cls.model_validate(raw or {})
        except ValidationError as err:
            issues = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'params'}: {e['msg']}" for e in err.errors())
            names = ", ".join(sorted(cls.model_fields))
            raise ParameterError(
                f"invalid parameters for adapter '{adapter}': {issues}",
                f"use only these parameters: {names}",
            ) from None


class FixedPointParams(AdapterParams):
    """Integer schemes encode floats as fixed-point: round(x * 2**frac_bits), |x| <= clip."""

    frac_bits: int = 20
    clip: float = 8.0
    weight_bits: int = 16  # fractional bits of a non-integer plaintext weight

    @property
    def value_bits(self) -> int:
        """Bits of one quantised value, sign included."""
        return self.frac_bits + max(0, math.ceil(math.log2(self.clip))) + 1


class LatticeParams(AdapterParams):
    """RLWE parameters: ring degree N and the bit sizes of the modulus chain."""

    ring_degree: int = 8192
    coeff_mod_bits: tuple[int, ...] = (60, 40, 40, 60)
    threads: int = 1

    @property
    def log_q(self) -> int:
        return sum(self.coeff_mod_bits)


class CKKSParams(LatticeParams):
    scale_bits: int = 40


class BFVParams(LatticeParams, FixedPointParams):
    plain_modulus_bits: int = 50


class PaillierParams(FixedPointParams):
    key_bits: int = 3072
    packing: str = "batch"  # "batch" (BatchCrypt-style slots) or "none" (one value per ciphertext)
