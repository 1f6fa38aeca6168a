"""Pareto sets over measured figures: an option is dominated only where the evidence says so.

Every measure is "lower is better". A value is an :class:`Interval` that also carries the
evidence a comparison needs, and :func:`decide` says which interval it uses:

- repeated measurements (costs per steady round, library repeats): Welch's 95 % interval on the
  difference of means; fewer than 2 values on either side decide nothing;
- rates (images recovered out of those attacked): Newcombe's 95 % interval on the difference of two
  Wilson intervals;
- exact bands (a deterministic figure, e.g. ciphertext bytes fresh vs recompressed): overlap is a tie.

A figure marked unstable (its range exceeds half its mean) is excluded from ranking: it neither
beats nor loses to anything, and the option it belongs to cannot be dominated through it.
"""

from __future__ import annotations

import functools
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from hebench.analysis.stats import more_to_decide, welch_interval
from hebench.analysis.success import images_to_decide, newcombe, wilson

UNSTABLE_SPREAD = 0.5  # (max - min) / mean above this: the figure is too noisy to rank on


@dataclass(frozen=True)
class Interval:
    """A measured value with what is shown around it (``lo <= value <= hi``) and the evidence behind it.

    ``sd`` and ``n``: the spread and count of repeated measurements (Welch); ``k`` of ``n``: a rate
    (Wilson, Newcombe); neither: an exact band. ``unit`` names what more of would decide a comparison.
    """

    value: float
    lo: float
    hi: float
    unstable: bool = False  # too noisy to rank on: excluded from every comparison
    sd: float | None = None
    n: int = 0
    k: int | None = None
    unit: str = "rounds"

    @classmethod
    def exact(cls, value: float) -> Interval:
        return cls(value, value, value)

    @classmethod
    def of(cls, values: Sequence[float], value: float | None = None, unit: str = "rounds") -> Interval:
        """Repeated measurements: shown as ``value`` (default their mean) with their min and max; unstable
        when their range exceeds UNSTABLE_SPREAD × mean."""
        mean, lo, hi = statistics.fmean(values), min(values), max(values)
        sd = statistics.stdev(values) if len(values) > 1 else 0.0
        shown = mean if value is None else value
        return cls(
            shown,
            min(lo, shown),
            max(hi, shown),
            mean > 0 and (hi - lo) / mean > UNSTABLE_SPREAD,
            sd,
            len(values),
            unit=unit,
        )

    @classmethod
    def rate(cls, k: int, n: int) -> Interval:
        """``k`` of ``n`` (images recovered of those attacked) with its Wilson 95 % interval."""
        lo, hi = wilson(k, n)
        return cls(k / n if n else 0.0, lo, hi, n=n, k=k, unit="images")

    @property
    def sampled(self) -> bool:
        return self.sd is not None

    def overlaps(self, other: Interval) -> bool:
        return self.lo <= other.hi and other.lo <= self.hi

    def scaled(self, factor: float) -> Interval:
        sd = None if self.sd is None else self.sd * factor
        return Interval(
            self.value * factor, self.lo * factor, self.hi * factor, self.unstable, sd, self.n, self.k, self.unit
        )


@dataclass(frozen=True)
class Decision:
    """How ``a`` compares with ``b`` (lower is better) and on what evidence.

    ``sign``: -1 ``a`` clearly lower, 1 clearly higher, 0 no clear difference, None not comparable.
    ``status``: clear, no difference (equal figures, or overlapping exact bands), too small (a difference
    that over MAX_MORE more rounds/images would not decide), undecided (``more`` more rounds/images per side
    would decide it, if the figures held), too few (no spread yet: at least ``more`` more), unstable, or
    unknown (a figure is missing).
    """

    sign: int | None
    status: str
    test: str = ""  # Welch, Newcombe (Wilson) or exact
    more: int | None = None
    unit: str = "rounds"

    def needs(self) -> str:
        """``"3 more rounds"``: what would decide it; empty when nothing would."""
        if self.more is None:
            return ""
        word = self.unit if self.more != 1 else self.unit.rstrip("s")
        return f"{'at least ' if self.status == 'too few' else ''}{self.more} more {word}"


def _unclear(more: int | None, equal: bool) -> str:
    if more:
        return "undecided"
    return "no difference" if equal else "too small"


@functools.lru_cache(maxsize=4096)
def decide(a: Interval | None, b: Interval | None) -> Decision:
    """Compare two figures on the evidence each carries (see the module's docstring); cached, as a Pareto set
    asks the same question many times."""
    if a is None or b is None:
        return Decision(None, "unknown")
    if a.unstable or b.unstable:
        return Decision(None, "unstable")
    if a.k is not None and b.k is not None:
        lo, hi = newcombe(a.k, a.n, b.k, b.n)
        if lo > 0 or hi < 0:
            return Decision(1 if lo > 0 else -1, "clear", "Newcombe (Wilson)", unit=a.unit)
        more = images_to_decide(a.k, a.n, b.k, b.n)
        return Decision(0, _unclear(more, a.k * b.n == b.k * a.n), "Newcombe (Wilson)", more, a.unit)
    if a.sampled and b.sampled:
        assert a.sd is not None and b.sd is not None
        interval = welch_interval(a.value, a.sd, a.n, b.value, b.sd, b.n)
        more = more_to_decide(a.value, a.sd, a.n, b.value, b.sd, b.n)
        if interval is None:
            return Decision(None, "too few", "Welch", more if more is not None else 2 - min(a.n, b.n), a.unit)
        lo, hi = interval
        if lo > 0 or hi < 0:
            return Decision(1 if lo > 0 else -1, "clear", "Welch", unit=a.unit)
        return Decision(0, _unclear(more, a.value == b.value), "Welch", more, a.unit)
    if a.overlaps(b):
        return Decision(0, "no difference", "exact")
    return Decision(-1 if a.hi < b.lo else 1, "clear", "exact")


def compare(a: Interval | None, b: Interval | None) -> int | None:
    """-1: ``a`` clearly lower; 1: clearly higher; 0: no clear difference; None: not comparable (missing,
    unstable, or too few measurements to judge)."""
    return decide(a, b).sign


def _no_worse(d: Decision, a: Interval | None, b: Interval | None) -> bool:
    """``a`` is no worse than ``b`` on the evidence: clearly lower, no difference at all, or no clear difference
    with ``a``'s figure at or below ``b``'s (an unclear difference pointing against ``a`` is not "no worse")."""
    if d.sign is None or d.sign > 0:
        return False
    return d.sign < 0 or d.status == "no difference" or (a is not None and b is not None and a.value <= b.value)


def dominates(a: Mapping[str, Interval | None], b: Mapping[str, Interval | None], measures: Sequence[str]) -> bool:
    """``a`` is clearly better than ``b`` on one measure and no worse on every other: comparable everywhere,
    clearly worse nowhere, and where a difference is unclear its figure is at or below ``b``'s."""
    decisions = [(decide(a.get(m), b.get(m)), a.get(m), b.get(m)) for m in measures]
    return all(_no_worse(d, va, vb) for d, va, vb in decisions) and any(d.sign == -1 for d, _, _ in decisions)


def would_dominate(
    a: Mapping[str, Interval | None], b: Mapping[str, Interval | None], measures: Sequence[str]
) -> list[tuple[str, Decision]]:
    """Where ``a`` does not dominate ``b`` only for want of evidence: ``a``'s figures are at or below ``b``'s
    everywhere and below somewhere, but no difference is clear yet (or some lack a spread). The measures that
    would decide it, each with what more would; empty otherwise."""
    if dominates(a, b, measures):
        return []
    pending = []
    for m in measures:
        va, vb = a.get(m), b.get(m)
        d = decide(va, vb)
        if va is None or vb is None or d.status in ("unstable", "unknown") or d.sign == 1 or va.value > vb.value:
            return []
        if d.sign is None or (d.status == "undecided" and va.value < vb.value):
            pending.append((m, d))
    return pending


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
