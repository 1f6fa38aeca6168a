"""Success rate: the fraction of images recovered above an SSIM threshold, with a Wilson interval."""

from __future__ import annotations

import math
from typing import Any

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
