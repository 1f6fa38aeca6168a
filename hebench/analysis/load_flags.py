"""Flags for runs whose wall times include waiting for a core: a load average above the usable cores,
or more party processes than cores. CPU times are charged per process and suffer less; wall times do not."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from hebench.analysis.summary import SummaryRow
from hebench.results.records import RunRecord


def usable_cores(environment: Mapping[str, Any]) -> int | None:
    """The cores the run could use: its CPU affinity, else the machine's logical cores."""
    affinity = environment.get("affinity")
    return len(affinity) if affinity else environment.get("logical_cores")


def party_processes(row: SummaryRow, suite: Mapping[str, Any], clients: int, cores: int) -> int:
    """Processes a run of ``row`` starts (workers: ``runtime.workers``, else one per core).

    Local: key authority, aggregator, clients or pool workers, engines. flower-sim: the hub, the
    simulation (ServerApp and Ray's driver) and its Ray workers; virtual clients are not processes.
    """
    from hebench.config import AUTO_POOL_ABOVE

    runtime = suite.get("runtime") or {}
    if row.runtime == "flower-sim":
        return 2 + min(clients, runtime.get("workers") or cores)
    hosting = runtime.get("hosting", "auto")
    pooled = hosting == "pool" or (hosting == "auto" and clients > AUTO_POOL_ABOVE)
    hosts = min(clients, runtime.get("workers") or cores) if pooled else clients
    local_engines = row.uses_engines and not (suite.get("offload") or {}).get("engines")
    return 2 + hosts + (clients if local_engines else 0)


def load_notes(run: RunRecord | None, rows: Iterable[SummaryRow]) -> list[str]:
    """At most two notes for a run under CPU contention (none for a quiet, roomy run): the configurations
    that ran at a load average above the usable cores, and those with more party processes than cores."""
    if run is None:
        return []
    cores = usable_cores(run.environment)
    if not cores:
        return []
    clients = int(run.data.get("clients") or (run.suite.get("data") or {}).get("clients") or 0)
    start_load = (run.environment.get("load_avg") or [None])[0]
    loaded: dict[str, float] = {}
    crowded: dict[str, int] = {}
    for row in rows:
        loads = [v for v in (row.load_avg_max, start_load) if v is not None]
        if loads and max(loads) > cores:
            loaded[row.config] = max(loads)
        if row.runtime != "flower" and clients:
            parties = party_processes(row, run.suite, clients, cores)
            if parties > cores:
                crowded[row.config] = parties
    notes = []
    if loaded:
        notes.append(
            f"load average above the {cores} usable cores (up to {max(loaded.values()):.1f}) during "
            f"{', '.join(loaded)}: wall times include waiting for a core (CPU times less so); rerun on a quieter "
            "machine to compare wall times"
        )
    if crowded:
        notes.append(
            f"more party processes than the {cores} usable cores: "
            + ", ".join(f"{label} {n}" for label, n in crowded.items())
            + ": wall times include waiting for a core; read CPU times, or give the run more cores"
        )
    return notes
