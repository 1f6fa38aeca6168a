"""Plaintext weights as exact fractions, so weighting adds no error and overflow is known in advance.

A weight w is taken as p/d, the fraction with the smallest denominator d <= max_weight_sum that
equals w to float precision (FedAvg's n_i / sum n reduces to such a fraction whenever the sample
counts allow); the ciphertext is multiplied by the integer p and the state records the common
denominator and ``weight_sum``, the total of integer weights in every slot. Adding brings both
operands to the least common denominator first. Since every integer multiplier is non-negative,
``weight_sum`` bounds both a slot's magnitude and its noise, and a sum beyond ``max_weight_sum``
is refused before any arithmetic.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

from hebench.errors import CiphertextError, PrecisionError

State = dict[str, Any]


def fresh_state() -> State:
    return {"den": 1, "weight_sum": 1}


def _check(weight_sum: int, max_weight_sum: int) -> None:
    if weight_sum > max_weight_sum:
        raise PrecisionError(
            f"aggregate would overflow its headroom (integer weight sum {weight_sum} > {max_weight_sum})",
            "raise the adapter's max_summands (FedAvg needs the common denominator of the weights: "
            "the number of clients when their sample counts are equal)",
        )


def _valid(state: State) -> tuple[int, int]:
    try:
        den, total = int(state["den"]), int(state["weight_sum"])
    except (KeyError, TypeError, ValueError):
        raise CiphertextError("ciphertext state lacks its weight record", "use the same hebench version") from None
    if den < 1 or total < 1:
        raise CiphertextError(f"ciphertext state is invalid (den {den}, weight sum {total})", "re-send the update")
    return den, total


def weigh(scalar: float, state: State, max_weight_sum: int) -> tuple[int, State]:
    """Integer multiplier for ``scalar`` and the state after it."""
    den, total = _valid(state)
    frac = Fraction(scalar).limit_denominator(max_weight_sum)
    if frac <= 0 or abs(float(frac) - scalar) > 1e-12 * max(1.0, scalar):
        raise PrecisionError(
            f"plaintext weight {scalar!r} is not a positive fraction with denominator <= {max_weight_sum}",
            "raise max_summands to the weights' common denominator, or use sample-count weights",
        )
    new = {"den": den * frac.denominator, "weight_sum": total * frac.numerator}
    _check(new["weight_sum"], max_weight_sum)
    return frac.numerator, new


def combine(a: State, b: State, max_weight_sum: int) -> tuple[int, int, State]:
    """(multiplier for a, multiplier for b, state of the sum) at the least common denominator."""
    (den_a, sum_a), (den_b, sum_b) = _valid(a), _valid(b)
    common = math.lcm(den_a, den_b)
    fa, fb = common // den_a, common // den_b
    new = {"den": common, "weight_sum": sum_a * fa + sum_b * fb}
    _check(new["weight_sum"], max_weight_sum)
    return fa, fb, new
