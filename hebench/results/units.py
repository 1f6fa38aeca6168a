"""One unit style for every table (CLI and report): bytes in B/kB/MB/GB, times in µs/ms/s, ratios as ``×``.

Decimal prefixes (1 kB = 1000 B) throughout; three significant figures; ``-`` for a missing value.
"""

from __future__ import annotations

MISSING = "-"


def fmt_bytes(n: float | None) -> str:
    """``1.33 MB``, ``420 kB``, ``81 B``."""
    if n is None:
        return MISSING
    for unit in ("B", "kB", "MB", "GB"):
        if abs(n) < 999.5 or unit == "GB":
            return f"{n:.3g} {unit}" if unit != "B" else f"{n:.0f} B"
        n /= 1000
    raise AssertionError("unreachable")


def fmt_seconds(s: float | None) -> str:
    """``812 µs``, ``62.1 ms``, ``1.25 s``, ``149 s``."""
    if s is None:
        return MISSING
    if abs(s) < 999.5e-6:
        return f"{s * 1e6:.3g} µs"
    if abs(s) < 0.9995:
        return f"{s * 1e3:.3g} ms"
    return f"{s:.3g} s"


def fmt_ratio(r: float | None, base: str = "raw") -> str:
    """A ratio to ``base``: ``7.19×raw``; ``0.92×host-he``."""
    return MISSING if r is None else f"{r:.3g}×{base}"


def fmt_spread(lo_hi: tuple[float, float] | None, unit: str) -> str:
    """A (min, max) range in one unit style: ``61.2 ms–82.0 ms``; unit is ``s`` or ``B``."""
    if lo_hi is None:
        return MISSING
    f = fmt_seconds if unit == "s" else fmt_bytes
    lo, hi = f(lo_hi[0]), f(lo_hi[1])
    return lo if lo == hi else f"{lo}–{hi}"


def fmt_number(v: float | int | None) -> str:
    """A plain number: integers with separators, floats to 4 significant figures."""
    if v is None:
        return MISSING
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, int):
        return f"{v:,}"
    return f"{v:.4g}"


def fmt_score(stats: dict | None, n: int, spec: str = ".2f", sep: str = " ± ") -> str:
    """An attack score over ``n`` images and seeds: ``0.42 ± 0.59``; one image has no spread, so none is shown
    (not ``±0.00``); never ``-0.00``."""
    if stats is None:
        return MISSING
    mean = float(format(stats["mean"], spec)) + 0.0  # + 0.0: a rounded -0.0 prints as 0.00
    if n <= 1:
        return f"{mean:{spec}}"
    return f"{mean:{spec}}{sep}{stats['std']:{spec}}"
