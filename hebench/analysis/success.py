"""Success rate: the fraction of images recovered above an SSIM threshold, with a Wilson interval; two rates
compared by Newcombe's interval. Pure statistics (importable from any layer: nothing of hebench above it)."""

from __future__ import annotations

import math
from typing import Any

from hebench.analysis.stats import first_true

SUCCESS_SSIM = 0.6  # an image counts as recovered at SSIM >= 0.6 (its content is recognisable; see README)


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval for k successes in n trials (95 % by default); (0, 1) when n is 0."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    den = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return max(0.0, centre - half), min(1.0, centre + half)


def success_rate(ssims: list[float], threshold: float = SUCCESS_SSIM) -> dict[str, Any]:
    """Over every attacked image (images x seeds, each image of a batch counted): k, n, rate, 95 % interval."""
    k = sum(s >= threshold for s in ssims)
    n = len(ssims)
    low, high = wilson(k, n)
    return {"threshold": threshold, "k": k, "n": n, "rate": k / n if n else None, "low": low, "high": high}


def newcombe(k_a: int, n_a: int, k_b: int, n_b: int, z: float = 1.96) -> tuple[float, float]:
    """Newcombe's hybrid score interval for ``rate_a - rate_b``, built from the two Wilson intervals (95 %)."""
    if n_a == 0 or n_b == 0:
        return -1.0, 1.0
    pa, pb = k_a / n_a, k_b / n_b
    la, ua = wilson(k_a, n_a, z)
    lb, ub = wilson(k_b, n_b, z)
    diff = pa - pb
    return diff - math.hypot(pa - la, ub - pb), diff + math.hypot(ua - pa, pb - lb)


MAX_MORE_IMAGES = 1000


def images_to_decide(k_a: int, n_a: int, k_b: int, n_b: int) -> int | None:
    """How many more attacked images per configuration would make Newcombe's interval exclude 0, if both
    recovery rates held. 0: it already does; None: the rates are equal or it would take over 1,000."""
    if n_a == 0 or n_b == 0 or k_a * n_b == k_b * n_a:
        return None
    pa, pb = k_a / n_a, k_b / n_b

    def decides(more: int) -> bool:
        na, nb = n_a + more, n_b + more
        lo, hi = newcombe(round(pa * na), na, round(pb * nb), nb)
        return lo > 0 or hi < 0

    return first_true(decides, MAX_MORE_IMAGES)
