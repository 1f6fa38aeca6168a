"""Log axes labelled in plain numbers (``0.6``, ``2``, ``2×``; never ``6×10⁻¹``) at a few round values, however
narrow the range: matplotlib's own log formatter labels a range under a decade with its minor ticks in
scientific notation."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Literal

from matplotlib.axes import Axes
from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullFormatter

MAX_TICKS = 5  # labelled ticks per axis
TICK_MANTISSAS = ((1,), (1, 2, 5), (1, 2, 3, 5), (1, 1.5, 2, 3, 5, 7), (1, 1.1, 1.2, 1.3, 1.5, 2, 3, 4, 5, 7, 9))


def round_ticks(lo: float, hi: float, most: int = MAX_TICKS) -> list[float]:
    """Round values between ``lo`` and ``hi``: the coarsest series (1 per decade, then 1-2-5, ...) giving at least
    3 ticks, at most ``most``, no two closer on the log axis than its span over ``most + 1`` (labels never run
    together)."""
    lo, hi = min(lo, hi), max(lo, hi)
    gap = math.log10(hi / lo) / (most + 1) if hi > lo else 1.0
    best: list[float] = []
    for mantissas in TICK_MANTISSAS:
        series = sorted(
            m * 10.0**e
            for e in range(math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1)
            for m in mantissas
            if lo <= m * 10.0**e <= hi
        )
        ticks = _spaced(series, gap)
        while len(ticks) > most:  # many decades: every other one
            ticks = ticks[::2]
        if len(ticks) > len(best):
            best = ticks
        if len(best) >= 3:
            break
    return best or [lo]


def _spaced(series: list[float], gap: float) -> list[float]:
    """The values of ``series`` kept going outwards from the one nearest 1× (so 1× is labelled when in range),
    each at least ``gap`` decades from the last kept."""
    if not series:
        return []
    start = min(range(len(series)), key=lambda i: abs(math.log10(series[i])))
    kept = [series[start]]
    for step in (1, -1):
        last = series[start]
        i = start + step
        while 0 <= i < len(series):
            if abs(math.log10(series[i] / last)) >= gap:
                kept.append(series[i])
                last = series[i]
            i += step
    return sorted(kept)


def log_axis(
    ax: Axes, which: Literal["x", "y"], lo: float, hi: float, label: Callable[[float], str] = lambda v: f"{v:g}"
) -> None:
    """``ax``'s ``which`` axis on a log scale from ``lo`` to ``hi``, labelled ``label(value)`` at
    :func:`round_ticks`; minor ticks unlabelled."""
    if which == "x":
        ax.set_xscale("log")
        ax.set_xlim(lo, hi)
    else:
        ax.set_yscale("log")
        ax.set_ylim(lo, hi)
    axis = ax.xaxis if which == "x" else ax.yaxis
    axis.set_major_locator(FixedLocator(round_ticks(lo, hi)))
    axis.set_major_formatter(FuncFormatter(lambda v, _: label(v)))
    axis.set_minor_locator(LogLocator(subs="all"))
    axis.set_minor_formatter(NullFormatter())
