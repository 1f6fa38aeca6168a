"""Steady state: which rounds are warm-up (measured, recorded, kept out of headline figures).

The first round after parties start pays one-off costs (imports, JIT and allocator warm-up, key
caches). By default one warm-up round is excluded whenever a configuration runs two or more rounds;
``measure.warmup_rounds`` sets another count. A resumed run restarts its parties, so the rounds after
each (re)start are warm-up too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def warmup_rounds(setting: int | None, rounds: int) -> int:
    """Warm-up rounds for ``measure.warmup_rounds`` = ``setting`` (None: 1 from 2 rounds up, else 0)."""
    if setting is None:
        return 1 if rounds >= 2 else 0
    return setting


def warmup_of_suite(suite: Mapping[str, Any] | None) -> int:
    """The warm-up count of a stored suite (a run record's ``suite``); 1 for suites that do not say."""
    suite = suite or {}
    rounds = int((suite.get("training") or {}).get("rounds") or 2)
    return warmup_rounds((suite.get("measure") or {}).get("warmup_rounds"), rounds)


def cold_rounds(starts: Iterable[int], warmup: int) -> frozenset[int]:
    """The rounds that follow each (re)start of a configuration's parties within ``warmup`` rounds."""
    return frozenset(r for s in starts for r in range(s, s + warmup))


def first_rounds(starts: Iterable[int]) -> frozenset[int]:
    """The first round after each start: always paying the start-up costs, whatever ``warmup`` says."""
    return frozenset(starts)
