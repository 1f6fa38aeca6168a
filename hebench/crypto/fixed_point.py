"""Fixed-point encoding for integer schemes (BFV, Paillier), with exact overflow tracking.

A value x becomes round(x * 2**frac_bits). A plaintext weight w that is not
an integer becomes round(w * 2**weight_bits) and adds weight_bits to the
fractional bits. The state travelling with a ciphertext records the total
fractional bits and ``weight_sum`` (the sum of integer weights applied), which
bounds every accumulated slot: |slot| <= weight_sum * 2**(value_bits - 1).
Overflow is therefore refused before it happens, never discovered as garbage.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from hebench.crypto.params import FixedPointParams
from hebench.errors import CiphertextError, PrecisionError


class FixedPointCodec:
    def __init__(self, params: FixedPointParams, max_weight_sum: int, headroom_fix: str | None = None) -> None:
        self.params = params
        self.max_weight_sum = max_weight_sum
        self.headroom_fix = headroom_fix or (
            "raise the adapter's max_summands (it sizes each slot's headroom), or lower weight_bits / frac_bits, "
            "or sum fewer or smaller-weighted updates"
        )

    def fresh_state(self) -> dict[str, Any]:
        return {"frac_bits": self.params.frac_bits, "weight_sum": 1}

    def check_range(self, vec: np.ndarray) -> None:
        peak = float(np.max(np.abs(vec))) if vec.size else 0.0
        if peak > self.params.clip:
            raise PrecisionError(
                f"vector holds |x| = {peak:.4g}, above the fixed-point range clip = {self.params.clip}",
                "raise the adapter's 'clip' parameter (costs precision or slots), or clip/scale the update",
            )

    def check_state(self, state: dict[str, Any]) -> None:
        """A received ciphertext's state: integer fractional bits and a weight sum within the limit."""
        frac, weight = state.get("frac_bits"), state.get("weight_sum")
        ok_frac = type(frac) is int and 0 <= frac <= 1024
        if not ok_frac or type(weight) is not int or not 0 <= weight <= self.max_weight_sum:
            raise CiphertextError(
                f"ciphertext state {state} is not one these parameters make (weight sum at most {self.max_weight_sum})",
                "sender and receiver must use the same adapter parameters",
            )

    def quantize(self, vec: np.ndarray) -> np.ndarray:
        return np.rint(vec * float(2**self.params.frac_bits)).astype(np.int64)

    def dequantize(self, ints: np.ndarray, state: dict[str, Any]) -> np.ndarray:
        return ints.astype(np.float64) / float(2 ** state["frac_bits"])

    def weigh(self, scalar: float, state: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """Integer multiplier for ``scalar`` and the resulting state."""
        if scalar.is_integer():
            factor, extra = int(scalar), 0
        else:
            factor, extra = round(scalar * 2**self.params.weight_bits), self.params.weight_bits
        new = {"frac_bits": state["frac_bits"] + extra, "weight_sum": state["weight_sum"] * factor}
        self._check_headroom(new)
        return factor, new

    def combine(self, a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
        if a["frac_bits"] != b["frac_bits"]:
            raise CiphertextError(
                f"cannot add ciphertexts with different fixed-point scales (2^{a['frac_bits']} vs 2^{b['frac_bits']})",
                "weigh every update the same way: all integer weights or all fractional weights",
            )
        new = {"frac_bits": a["frac_bits"], "weight_sum": a["weight_sum"] + b["weight_sum"]}
        self._check_headroom(new)
        return new

    def _check_headroom(self, state: dict[str, Any]) -> None:
        if state["weight_sum"] > self.max_weight_sum:
            raise PrecisionError(
                f"aggregate would overflow the fixed-point headroom (weight sum {state['weight_sum']} > "
                f"{self.max_weight_sum})",
                self.headroom_fix,
            )

    def precision(self) -> float:
        """Max abs error of a weighted sum (weights summing to <= 1) of max_summands vectors."""
        p = self.params
        per_summand = 2.0 ** -(p.frac_bits + 1) + p.clip * 2.0 ** -(p.weight_bits + 1)
        return p.max_summands * per_summand + 2.0**-p.frac_bits


def headroom_bits(params: FixedPointParams) -> int:
    """Bits an accumulator needs beyond one value for max_summands fractional weights."""
    return params.weight_bits + math.ceil(math.log2(max(params.max_summands, 2)))
