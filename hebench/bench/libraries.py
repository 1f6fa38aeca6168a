"""Every HE adapter that imports here, at each vector size: ``hebench compare libraries``' figures as a study.

The measurement is :func:`hebench.heops.compare.compare` (each adapter and size in a fresh worker process,
one thread); adapters whose library does not import here are listed under ``skipped`` with the reason.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from hebench.bench.registry import Option, ints, number, study
from hebench.heops.compare import DEFAULT_ADAPTERS, DEFAULT_SIZES, compare, split_available


@study(
    "libraries",
    options=(
        Option("--sizes", "sizes", "vector sizes, comma-separated (default 4096,1206590)", ints),
        Option("--budget", "budget_s", "seconds per operation before measuring a prefix (default 20)", number),
    ),
)
def libraries(sizes: tuple[int, ...] = DEFAULT_SIZES, budget_s: float = 20.0) -> dict[str, Any]:
    """Per-operation costs of every HE adapter that imports here, at each vector size (compare libraries)."""
    adapters, skipped = split_available(DEFAULT_ADAPTERS)
    return {
        "benchmark": "libraries",
        "results": compare(adapters, sizes, budget_s=budget_s),
        "skipped": [asdict(s) for s in skipped],
    }
