"""Summary statistics of repeated measurements, with an instability flag."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

UNSTABLE_CV = 0.10  # coefficient of variation above which a result is flagged


@dataclass(frozen=True)
class Stats:
    n: int
    median: float
    trimmed_mean: float  # mean of the middle 80 %
    p10: float
    p90: float
    stdev: float
    min: float
    max: float

    @property
    def unstable(self) -> bool:
        return self.n > 2 and self.median > 0 and self.stdev / self.median > UNSTABLE_CV

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "unstable": self.unstable}


def summarize(values: list[float]) -> Stats:
    if not values:
        raise ValueError("no values to summarise")
    arr = np.sort(np.asarray(values, dtype=np.float64))
    cut = int(len(arr) * 0.1)
    middle = arr[cut : len(arr) - cut] if len(arr) - 2 * cut > 0 else arr
    return Stats(
        n=len(arr),
        median=float(np.median(arr)),
        trimmed_mean=float(middle.mean()),
        p10=float(np.percentile(arr, 10)),
        p90=float(np.percentile(arr, 90)),
        stdev=float(statistics.stdev(arr)) if len(arr) > 1 else 0.0,
        min=float(arr[0]),
        max=float(arr[-1]),
    )


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
