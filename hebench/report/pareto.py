"""Pareto sets over measured intervals: an option is dominated only where the difference is outside the noise.

Every measure is "lower is better". A value is an :class:`Interval` (its spread over
steady rounds, or over images and seeds); two intervals that overlap are a tie. An
interval marked unstable never beats anything: comparisons on it are ties.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

UNSTABLE_SPREAD = 0.5  # (max - min) / mean above this: the figure is too noisy to rank on


@dataclass(frozen=True)
class Interval:
    """A measured value with its spread: ``lo <= value <= hi``."""

    value: float
    lo: float
    hi: float
    unstable: bool = False  # too noisy to rank on: compares as a tie with anything

    @classmethod
    def exact(cls, value: float) -> Interval:
        return cls(value, value, value)

    @classmethod
    def of(cls, values: Sequence[float]) -> Interval:
        """Mean, min and max of repeated measurements; unstable when their range exceeds UNSTABLE_SPREAD × mean."""
        mean, lo, hi = sum(values) / len(values), min(values), max(values)
        return cls(mean, lo, hi, unstable=mean > 0 and (hi - lo) / mean > UNSTABLE_SPREAD)

    def overlaps(self, other: Interval) -> bool:
        return self.lo <= other.hi and other.lo <= self.hi


def compare(a: Interval | None, b: Interval | None) -> int | None:
    """-1: ``a`` clearly lower; 1: clearly higher; 0: a tie (overlap, or either unstable); None: either is
    unmeasured, so they cannot be compared (an unknown neither wins nor loses)."""
    if a is None or b is None:
        return None
    if a.unstable or b.unstable or a.overlaps(b):
        return 0
    return -1 if a.hi < b.lo else 1


def dominates(a: Mapping[str, Interval | None], b: Mapping[str, Interval | None], measures: Sequence[str]) -> bool:
    """``a`` is known to be no worse than ``b`` on every measure and clearly better on at least one."""
    signs = [compare(a.get(m), b.get(m)) for m in measures]
    return all(s is not None and s <= 0 for s in signs) and any(s is not None and s < 0 for s in signs)


def pareto_set(options: Mapping[str, Mapping[str, Interval | None]], measures: Sequence[str]) -> list[str]:
    """The names of the options no other option dominates, in the given order."""
    return [
        name
        for name, values in options.items()
        if not any(dominates(other, values, measures) for key, other in options.items() if key != name)
    ]


def dominated_by(options: Mapping[str, Mapping[str, Interval | None]], name: str, measures: Sequence[str]) -> list[str]:
    """The options that dominate ``name``."""
    return [k for k, v in options.items() if k != name and dominates(v, options[name], measures)]


def ties(options: Mapping[str, Mapping[str, Interval | None]], names: Sequence[str], measure: str) -> list[list[str]]:
    """Groups (of two or more) among ``names`` whose stable values on ``measure`` are ties with each other."""
    groups: list[list[str]] = []
    for name in names:
        value = options[name].get(measure)
        if value is None or value.unstable:
            continue
        for group in groups:
            if all(compare(value, options[g].get(measure)) == 0 for g in group):
                group.append(name)
                break
        else:
            groups.append([name])
    return [g for g in groups if len(g) > 1]
