"""The Flower server's peak memory against the number of clients (issue #30's aggregator-memory goal).

The same one-round CKKS suite on ``--engine flower-sim`` with few and with more clients: the server pulls the
training replies one at a time into a running sum (:mod:`hebench.flower.strategy`), so its peak RSS should
not grow with the clients by an encrypted update each. Reported: the server's peak RSS per client count, one
encrypted update's bytes, and ``extra_updates_held``: the peak's growth between the smallest and the largest
count divided by one update's bytes (about 0–1 when replies are streamed, the added clients' count when the
server holds them all). The simulation's server process also hosts Flower's SuperLink state and Ray's driver,
so the absolute peak is the process's, not the strategy's alone.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from hebench.results import read_records
from hebench.results.records import PartyRoundRecord
from hebench.runtime.runner import Runner
from hebench.suite import parse_suite


def memory_suite(clients: int, hidden: int, adapter: str) -> dict[str, Any]:
    return {
        "name": "bench-flower-memory",
        "data": {"dataset": "digits", "clients": clients},
        "model": {"name": "mlp", "hidden": hidden},
        "training": {"rounds": 1, "local_steps": 1, "lr": 0.1},
        "configurations": [{"mode": "host-he", "adapter": adapter}],
        "measure": {"timeout_s": 1800, "decryption_error": False},
        "runtime": {"workers": 2},
    }


def server_row(run_dir: Path) -> dict[str, Any]:
    """The server's peak RSS and the uploads it received, from a run's records."""
    records = [r for r in read_records(run_dir / "results.jsonl").records if isinstance(r, PartyRoundRecord)]
    (server,) = [r for r in records if r.role == "aggregator"]
    uploads = list((server.update_bytes or {}).values())
    return {
        "server_peak_rss_bytes": server.peak_rss_bytes,
        "update_bytes": max(uploads),
        "updates_received": len(uploads),
    }


def flower_memory(clients: tuple[int, ...] = (2, 6), hidden: int = 256, adapter: str = "tenseal-ckks") -> dict:
    from hebench.flower.simulation import FlowerSimRuntime

    rows = []
    for n in clients:
        with tempfile.TemporaryDirectory(prefix="hebench-bench-flower-memory-") as tmp:
            Runner(parse_suite(memory_suite(n, hidden, adapter)), Path(tmp), runtime=FlowerSimRuntime()).run()
            rows.append({"clients": n, **server_row(Path(tmp))})
    low, high = rows[0], rows[-1]
    growth = high["server_peak_rss_bytes"] - low["server_peak_rss_bytes"]
    return {
        "engine": "flower-sim",
        "adapter": adapter,
        "model": f"mlp hidden {hidden}",
        "rows": rows,
        "extra_updates_held": growth / high["update_bytes"],
        "added_clients": high["clients"] - low["clients"],
        "note": "peak RSS of the simulation's server process (ServerApp, SuperLink state, Ray driver)",
    }
