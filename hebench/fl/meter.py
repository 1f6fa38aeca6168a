"""Per-phase measurement inside one party: CPU (OS accounting), wall, cycles, RSS.

A party in its own process is charged its process's CPU time. A client hosted
as a thread in a shared worker process (the local runtime's pool) is charged
its own thread's CPU time (``CLOCK_THREAD_CPUTIME_ID``), never a share of the
worker's; its peak RSS is the worker's, which its records say.

In a shaped run (``network:``) the meter also takes the party's link ledger (what crossed its link and how
long the party was held by it), and a client of a slower tier has each phase stretched by
``(compute_slowdown - 1) ×`` the CPU time the phase used: wall times as on the slower device, CPU times as
measured here.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from hebench.measure.cycles import open_cycle_counter
from hebench.measure.memory import peak_rss_bytes
from hebench.net.shaping import scope as shaping
from hebench.results.fields import Phases


class PhaseMeter:
    """Accumulates phases of the current round; ``take()`` returns and resets them."""

    def __init__(self, worker: str | None = None) -> None:
        """``worker``: the shared process hosting this party as a thread (None: the party owns its process)."""
        self.worker = worker
        self._cpu = time.process_time if worker is None else time.thread_time
        self._counter, self.cycles_reason = open_cycle_counter()
        self._slowdown = shaping.compute_slowdown()  # the party's tier (bound before its meters are made)
        self._phases: dict[str, dict[str, float]] = defaultdict(lambda: {"wall_s": 0.0, "cpu_s": 0.0, "cycles": 0.0})

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        c0 = self._counter.read() if self._counter else 0
        p0, w0 = self._cpu(), time.perf_counter()
        try:
            yield
        finally:
            if self._slowdown > 1.0:  # a slower device: the same work takes longer in wall time
                time.sleep((self._slowdown - 1.0) * max(0.0, self._cpu() - p0))
            entry = self._phases[name]
            entry["wall_s"] += time.perf_counter() - w0
            entry["cpu_s"] += self._cpu() - p0
            if self._counter:
                entry["cycles"] += self._counter.read() - c0

    def measured(self) -> dict[str, Any]:
        """``take()`` as the typed fields of a measured record (``phases``, ``peak_rss_bytes``, ``cycles_source``)."""
        taken = self.take()
        return {**taken, "phases": Phases.from_json(taken["phases"])}

    def take(self) -> dict[str, Any]:
        phases = {k: {**v, "cycles": v["cycles"] if self._counter else None} for k, v in self._phases.items()}
        self._phases.clear()
        shared = {} if self.worker is None else {"worker": self.worker}
        ledger = shaping.take_ledger()
        if ledger is not None:
            shared["network"] = ledger
        return {
            "phases": phases,
            "cpu_accounting": "process" if self.worker is None else "thread",
            "peak_rss_bytes": peak_rss_bytes(),
            "peak_rss_scope": "process" if self.worker is None else "worker",  # a pool's clients share its RSS
            **shared,
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
