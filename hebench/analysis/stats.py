"""Two samples compared: Welch's interval and test on per-round values, and how many more values would decide.

Pure statistics (the standard library, numpy and scipy only), importable from any layer. One sample's summary
is :mod:`hebench.measure.sample`; rates (Wilson, Newcombe) are :mod:`hebench.analysis.success`.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence

CONFIDENCE = 0.95  # every interval a verdict rests on is a two-sided 95 % interval
MAX_MORE = 1000  # a difference needing more repeats than this is called too small to decide in practice


def welch_interval(
    mean_a: float, sd_a: float, n_a: int, mean_b: float, sd_b: float, n_b: int, confidence: float = CONFIDENCE
) -> tuple[float, float] | None:
    """Welch's interval for ``mean_a - mean_b`` from two samples' means, standard deviations and sizes.

    None when either sample has fewer than 2 values (no spread to judge a difference by). Two samples
    without any spread (e.g. bytes that never vary) give the difference itself, exactly.
    """
    if n_a < 2 or n_b < 2:
        return None
    diff = mean_a - mean_b
    va, vb = sd_a * sd_a / n_a, sd_b * sd_b / n_b
    se2 = va + vb
    if se2 <= 0:
        return diff, diff
    from scipy import stats as sps

    df = se2 * se2 / ((va * va / (n_a - 1) if va else 0.0) + (vb * vb / (n_b - 1) if vb else 0.0))
    half = float(sps.t.ppf(0.5 + confidence / 2, df)) * se2**0.5
    return diff - half, diff + half


def more_to_decide(
    mean_a: float, sd_a: float, n_a: int, mean_b: float, sd_b: float, n_b: int, confidence: float = CONFIDENCE
) -> int | None:
    """How many more values per sample would make Welch's interval exclude 0, if means and spreads held.

    0: it already does. None: the means are equal (no number decides), or it would take more than MAX_MORE.
    A sample of one value (no spread yet) counts as having its partner's spread.
    """
    if mean_a == mean_b:
        return None
    if n_a < 2 and n_b < 2:
        return 2 - min(n_a, n_b)  # at least a spread is needed; what it shows is unknown
    sd_a = sd_a if n_a >= 2 else sd_b
    sd_b = sd_b if n_b >= 2 else sd_a

    def decides(more: int) -> bool:
        interval = welch_interval(mean_a, sd_a, n_a + more, mean_b, sd_b, n_b + more, confidence)
        return interval is not None and (interval[0] > 0 or interval[1] < 0)

    return first_true(decides, MAX_MORE)


def first_true(decides: Callable[[int], bool], most: int) -> int | None:
    """The smallest ``m`` in 0..``most`` with ``decides(m)``, for a ``decides`` that stays true once true
    (bisection, then a check downwards in case rounding made it not quite monotone); None if none."""
    if not decides(most):
        return None
    lo, hi = -1, most  # decides(hi) holds; lo is below every m that does
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if decides(mid):
            hi = mid
        else:
            lo = mid
    while hi > 0 and decides(hi - 1):
        hi -= 1
    return hi


def no_spread(values: Sequence[float]) -> bool:
    """All values equal, up to float rounding (a mean of equal byte counts may differ in its last bit)."""
    return max(values) - min(values) <= 1e-12 * max(abs(max(values)), abs(min(values)))


def welch_test(a: Sequence[float], b: Sequence[float]) -> float | None:
    """The two-sided p-value of Welch's t-test of ``a`` against ``b``; None when either sample has fewer than 2
    values or neither has any spread (then the values themselves decide: equal or not).

    Computed from the means and variances (as :func:`welch_interval`), so samples that are nearly identical give
    a p-value, not SciPy's "catastrophic cancellation" warning.
    """
    if len(a) < 2 or len(b) < 2 or (no_spread(a) and no_spread(b)):
        return None
    from scipy import stats as sps

    va = 0.0 if no_spread(a) else statistics.variance(a) / len(a)
    vb = 0.0 if no_spread(b) else statistics.variance(b) / len(b)
    diff = statistics.fmean(a) - statistics.fmean(b)
    df = (va + vb) ** 2 / ((va * va / (len(a) - 1)) + (vb * vb / (len(b) - 1)))
    t = abs(diff) / math.sqrt(va + vb)
    return float(min(1.0, 2.0 * sps.t.sf(t, df)))
