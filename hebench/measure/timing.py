"""Calibrated, repeated measurement of one operation (pyperf-style).

Warm-up calls are kept apart from values; the loop count is calibrated so each
value lasts at least ``min_time``; repeats stop early when ``budget_s`` would
be exceeded. Values are seconds per call: wall (perf_counter), CPU (the
process's user+system time, all threads) and cycles where perf_event has them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hebench.measure.cycles import open_cycle_counter
from hebench.measure.sample import Stats, summarize


@dataclass(frozen=True)
class Measurement:
    wall: Stats
    cpu: Stats
    cycles: Stats | None
    loops: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "wall_s": self.wall.to_dict(),
            "cpu_s": self.cpu.to_dict(),
            "cycles": self.cycles.to_dict() if self.cycles else None,
            "loops": self.loops,
        }


def measure(
    fn: Callable[[], Any],
    *,
    repeats: int = 7,
    min_time: float = 0.05,
    budget_s: float = 10.0,
    warmup: int = 1,
) -> Measurement:
    """Time ``fn`` (no arguments); returns per-call statistics."""
    start = time.perf_counter()
    for _ in range(max(warmup, 1)):
        fn()
    first = (time.perf_counter() - start) / max(warmup, 1)
    loops = max(1, int(min_time / max(first, 1e-9)))
    repeats = max(1, min(repeats, int(budget_s / max(first * loops, 1e-9))))
    counter, _ = open_cycle_counter()
    walls: list[float] = []
    cpus: list[float] = []
    cycles: list[float] = []
    try:
        for _ in range(repeats):
            c0 = counter.read() if counter else 0
            p0, w0 = time.process_time(), time.perf_counter()
            for _ in range(loops):
                fn()
            w1, p1 = time.perf_counter(), time.process_time()
            if counter:
                cycles.append((counter.read() - c0) / loops)
            walls.append((w1 - w0) / loops)
            cpus.append((p1 - p0) / loops)
    finally:
        if counter:
            counter.close()
    return Measurement(summarize(walls), summarize(cpus), summarize(cycles) if cycles else None, loops)
