"""Plaintext weights as exact fractions, so weighting adds no error and overflow is known in advance.

A weight w is taken as p/d, the fraction with the smallest denominator d <= max_weight_sum that
equals w to float precision (FedAvg's n_i / sum n reduces to such a fraction whenever the sample
counts allow); the ciphertext is multiplied by the integer p and the state records the common
denominator and ``weight_sum``, the total of integer weights in every slot. Adding brings both
operands to the least common denominator first. Since every integer multiplier is non-negative,
``weight_sum`` bounds both a slot's magnitude and its noise, and a sum beyond ``max_weight_sum``
is refused before any arithmetic.

**Weights applied before encryption** (:class:`PreWeight`). Exact weights need headroom for the
weights' common denominator: with unequal sample counts, the sum of the samples (FEMNIST's compact
16-bit row: 6.88 bytes per value instead of 3.87). A client may instead weigh its own values before
they are quantised: client i of m encrypts ``W_i x`` with ``W_i = m n_i / sum n`` (the mean weight
is 1), at the usual step, its integers bounded by ``L_i``, where the ``L_i`` are ``W_i * levels``
rounded so that they total exactly ``m * levels`` (largest remainders). The state records ``den = m``
and ``offset = L_i``: the bound on a slot's magnitude in quantisation steps (BFV stores values offset
by it, so fields never borrow). The aggregator adds these with weight 1: the sum's offset is
``m * levels``, within the headroom of m equal-weight summands, whatever the sample counts, and the
client divides by m after decryption. A quantisation error of at most one step per client, divided
by m, stays within one step: the stated precision. States without ``offset`` have ``weight_sum *
levels``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from hebench.errors import CiphertextError, ParameterError, PrecisionError

State = dict[str, Any]


@dataclass(frozen=True)
class PreWeight:
    """One client's FedAvg weight, applied to its values before encryption (see the module's docstring)."""

    weight: float  # W_i = m n_i / sum n: the value multiplier (mean 1 over the round's clients)
    bound: int  # L_i: |W_i x / step| is clamped to this many steps; the round's bounds total m * levels
    summands: int  # m: the aggregate is divided by this after decryption

    def to_json(self) -> dict[str, Any]:
        return {"weight": self.weight, "bound": self.bound, "summands": self.summands}

    @classmethod
    def from_json(cls, raw: Any) -> PreWeight:
        try:
            weight, bound, summands = float(raw["weight"]), int(raw["bound"]), int(raw["summands"])
        except (KeyError, TypeError, ValueError):
            raise CiphertextError(
                "a pre-weight lacks weight, bound or summands", "same hebench on every party?"
            ) from None
        if not (math.isfinite(weight) and weight >= 0 and bound >= 0 and summands >= 1):
            raise CiphertextError(f"pre-weight {raw} is out of range", "same hebench on every party?")
        return cls(weight, bound, summands)


def pre_weights(samples: dict[int, int], levels: int) -> dict[int, PreWeight]:
    """Each client's :class:`PreWeight` for FedAvg over ``samples``; the bounds total ``m * levels`` exactly."""
    total, m = sum(samples.values()), len(samples)
    if total <= 0 or any(n < 0 for n in samples.values()):
        raise ParameterError("clients reported no training samples", "give every client at least one sample")
    exact = {i: Fraction(m * n * levels, total) for i, n in samples.items()}
    bounds = {i: math.floor(v) for i, v in exact.items()}
    spare = m * levels - sum(bounds.values())
    for i in sorted(exact, key=lambda i: (-(exact[i] - bounds[i]), i))[:spare]:  # largest remainders first
        bounds[i] += 1
    return {i: PreWeight(m * n / total, bounds[i], m) for i, n in samples.items()}


def fresh_state() -> State:
    return {"den": 1, "weight_sum": 1}


def pre_weighted_state(pre: PreWeight) -> State:
    return {"den": pre.summands, "weight_sum": 1, "offset": pre.bound}


def offset_of(state: State, levels: int) -> int:
    """The bound on a slot's magnitude, in quantisation steps (BFV: the offset its fields are stored at)."""
    return int(state["offset"]) if "offset" in state else int(state["weight_sum"]) * levels


def _check(state: State, max_weight_sum: int, levels: int | None) -> None:
    weight_sum = state["weight_sum"]
    if weight_sum > max_weight_sum:
        raise PrecisionError(
            f"aggregate would overflow its headroom (integer weight sum {weight_sum} > {max_weight_sum})",
            "raise the adapter's max_summands (FedAvg needs the common denominator of the weights: "
            "the number of clients when their sample counts are equal)",
        )
    if levels is not None and "offset" in state and state["offset"] > max_weight_sum * levels:
        raise PrecisionError(
            f"aggregate would overflow its headroom (magnitude bound {state['offset']} steps > "
            f"{max_weight_sum} summands of {levels})",
            "raise the adapter's max_summands to at least the number of clients per round",
        )


def _valid(state: State) -> tuple[int, int]:
    try:
        den, total = int(state["den"]), int(state["weight_sum"])
        offset = int(state.get("offset", 1))
    except (KeyError, TypeError, ValueError):
        raise CiphertextError("ciphertext state lacks its weight record", "use the same hebench version") from None
    if den < 1 or total < 1 or offset < 0:
        raise CiphertextError(f"ciphertext state is invalid (den {den}, weight sum {total})", "re-send the update")
    return den, total


def weigh(scalar: float, state: State, max_weight_sum: int, levels: int | None = None) -> tuple[int, State]:
    """Integer multiplier for ``scalar`` and the state after it."""
    den, total = _valid(state)
    frac = Fraction(scalar).limit_denominator(max_weight_sum)
    if frac <= 0 or abs(float(frac) - scalar) > 1e-12 * max(1.0, scalar):
        raise PrecisionError(
            f"plaintext weight {scalar!r} is not a positive fraction with denominator <= {max_weight_sum}",
            "raise max_summands to the weights' common denominator, or use sample-count weights",
        )
    new = {"den": den * frac.denominator, "weight_sum": total * frac.numerator}
    if "offset" in state:
        new["offset"] = int(state["offset"]) * frac.numerator
    _check(new, max_weight_sum, levels)
    return frac.numerator, new


def combine(a: State, b: State, max_weight_sum: int, levels: int | None = None) -> tuple[int, int, State]:
    """(multiplier for a, multiplier for b, state of the sum) at the least common denominator."""
    (den_a, sum_a), (den_b, sum_b) = _valid(a), _valid(b)
    common = math.lcm(den_a, den_b)
    fa, fb = common // den_a, common // den_b
    new = {"den": common, "weight_sum": sum_a * fa + sum_b * fb}
    if ("offset" in a or "offset" in b) and levels is not None:
        new["offset"] = offset_of(a, levels) * fa + offset_of(b, levels) * fb
    _check(new, max_weight_sum, levels)
    return fa, fb, new
