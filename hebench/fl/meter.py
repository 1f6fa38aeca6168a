"""Per-phase measurement inside one party process: CPU (OS accounting), wall, cycles, RSS."""

from __future__ import annotations

import resource
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from hebench.measure.cycles import open_cycle_counter
from hebench.results.fields import Phases


class PhaseMeter:
    """Accumulates phases of the current round; ``take()`` returns and resets them."""

    def __init__(self) -> None:
        self._counter, self.cycles_reason = open_cycle_counter()
        self._phases: dict[str, dict[str, float]] = defaultdict(lambda: {"wall_s": 0.0, "cpu_s": 0.0, "cycles": 0.0})

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        c0 = self._counter.read() if self._counter else 0
        p0, w0 = time.process_time(), time.perf_counter()
        try:
            yield
        finally:
            entry = self._phases[name]
            entry["wall_s"] += time.perf_counter() - w0
            entry["cpu_s"] += time.process_time() - p0
            if self._counter:
                entry["cycles"] += self._counter.read() - c0

    def measured(self) -> dict[str, Any]:
        """``take()`` as the typed fields of a measured record (``phases``, ``peak_rss_bytes``, ``cycles_source``)."""
        taken = self.take()
        return {**taken, "phases": Phases.from_json(taken["phases"])}

    def take(self) -> dict[str, Any]:
        phases = {k: {**v, "cycles": v["cycles"] if self._counter else None} for k, v in self._phases.items()}
        self._phases.clear()
        return {
            "phases": phases,
            "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
            "cycles_source": "perf_event" if self._counter else None,
        }


def merge_phases(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The phases of several ``take()`` results added up (cycles stay None unless some part counted them)."""
    merged: dict[str, dict[str, Any]] = {}
    for rec in records:
        for name, p in rec["phases"].items():
            entry = merged.setdefault(name, {"wall_s": 0.0, "cpu_s": 0.0, "cycles": None})
            entry["wall_s"] += p["wall_s"]
            entry["cpu_s"] += p["cpu_s"]
            if p.get("cycles") is not None:
                entry["cycles"] = (entry["cycles"] or 0.0) + p["cycles"]
    return merged
