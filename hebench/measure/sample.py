"""One sample of repeated measurements summarised (median, trimmed mean, percentiles), with an instability flag.

Pure statistics of one sample: it imports nothing of hebench, so the measuring code below every other layer can
use it. Comparing two samples (Welch's interval, significance) is :mod:`hebench.analysis.stats`.
"""

from __future__ import annotations

import statistics
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
