"""Scale: aggregator and key-authority costs per round against the number of clients, on one machine.

For each client count (default 8, 32, 128, 256) and mode (raw; host-HE with
TenSEAL CKKS; compact host-HE, seeded BFV with 16-bit values), one run of the
digits MLP with every client in the local runtime's pool (``runtime.hosting:
pool``, one worker per core). Per steady round (rounds after the first): the
aggregator's CPU (measured phases, waits excluded), bytes in and out, and peak
RSS; per key epoch: the key authority's keygen and distribution CPU, bytes
pushed, peak RSS. Per run: set-up time per client, wall time, and the run's
peak memory (the largest sum of the RSS of every party process, sampled with
psutil; library pages shared between processes are counted once per process).
Slopes per client are least-squares fits over the client counts. Goal: 256
clients, host-HE, 3 rounds in at most 5 minutes and 8 GB.

The flower-sim point runs 1,000 virtual clients on Flower's Simulation Engine
(``--engine flower-sim``) with 100 trained per round, in each mode. Digits
holds 1,438 training samples, so its clients hold one or two
(``data.min_per_client: 1``); the full FEMNIST (3,500 writers) would hold
more, but cannot be downloaded on this machine.
"""

from __future__ import annotations

import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import psutil

from hebench.bench.registry import Option, ints, study
from hebench.config import parse_suite
from hebench.crypto.registry import status
from hebench.results import read_records
from hebench.runtime.runner import Runner

CLIENTS = (8, 32, 128, 256)
SIM_CLIENTS, SIM_PER_ROUND = 1000, 100
HE_ADAPTER = "tenseal-ckks"
# Compact HE (#13): 16-bit values in [-2, 2]; FedAvg weights n/1438 have a common denominator under 2,048
COMPACT = {"mode": "host-he", "adapter": "seal-bfv", "params": {"bits": 16, "clip": 2.0, "max_summands": 2048}}
CONFIGS = {"raw": {"mode": "raw"}, "host-he": {"mode": "host-he", "adapter": HE_ADAPTER}, "compact": COMPACT}
GOAL = {"clients": 256, "mode": "host-he", "rounds": 3, "wall_s": 300.0, "peak_memory_bytes": 8e9}


class MemorySampler:
    """The largest sum of RSS over this process's descendants (the parties), sampled every ``interval_s``."""

    def __init__(self, interval_s: float = 0.25) -> None:
        self.interval_s, self.peak, self.peak_processes = interval_s, 0, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        me = psutil.Process()
        while not self._stop.wait(self.interval_s):
            total, count = 0, 0
            for child in me.children(recursive=True):
                try:
                    total += child.memory_info().rss
                    count += 1
                except psutil.Error:
                    continue
            if total > self.peak:
                self.peak, self.peak_processes = total, count

    def __enter__(self) -> MemorySampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def scale_suite(clients: int, mode: str, rounds: int = 3) -> dict[str, Any]:
    return {
        "name": f"bench-scale-{clients}-{mode}",
        "data": {"dataset": "digits", "clients": clients, "min_per_client": 1},
        "model": {"name": "mlp", "hidden": 16},
        "training": {"rounds": rounds, "lr": 0.1},
        "configurations": [CONFIGS[mode]],
        "runtime": {"hosting": "pool"},
        "measure": {"setup_timeout_s": 900, "timeout_s": 900},
    }


def sim_suite(clients: int, per_round: int, mode: str, rounds: int = 2) -> dict[str, Any]:
    suite = scale_suite(clients, mode, rounds)
    suite["name"] = f"bench-scale-sim-{clients}-{mode}"
    suite["training"]["clients_per_round"] = per_round
    suite.pop("runtime")
    return suite


def measure_sim_run(
    clients: int = SIM_CLIENTS, per_round: int = SIM_PER_ROUND, mode: str = "raw", rounds: int = 2
) -> dict[str, Any]:
    """One flower-sim run: server CPU (its phases' thread time) and bytes and a trained client's CPU per
    steady round, the hub's key service over the run, wall, peak memory."""
    from hebench.runtime.flower.simulation import FlowerSimRuntime

    with tempfile.TemporaryDirectory() as tmp, MemorySampler() as memory:
        began = time.time()
        suite = parse_suite(sim_suite(clients, per_round, mode, rounds))
        results = Runner(suite, Path(tmp), runtime=FlowerSimRuntime()).run()
        wall = time.time() - began
        records = [r.to_json() for r in read_records(results).records]
    agg = [r for r in records if r["kind"] == "party_round" and r["role"] == "aggregator" and r["round"] >= 1]
    clients_rounds = [r for r in records if r["kind"] == "party_round" and r["role"] == "client"]
    trained = [r for r in clients_rounds if "train" in r["phases"]]
    keys = next(r for r in records if r["kind"] == "key_service")  # the hub: the key sets it served
    return {
        "engine": "flower-sim",
        "clients": clients,
        "clients_per_round": per_round,
        "mode": mode,
        "adapter": CONFIGS[mode].get("adapter", "plain"),
        "rounds": rounds,
        "wall_s": wall,
        "flower_round_wall_s": statistics.fmean(r["flower_round_wall_s"] for r in agg),
        "aggregator_cpu_s_per_round": statistics.fmean(_busy_cpu(r) for r in agg),
        "aggregator_bytes_received_per_round": statistics.fmean(r["bytes_received"] for r in agg),
        "aggregator_bytes_sent_per_round": statistics.fmean(r["bytes_sent"] for r in agg),
        "aggregator_peak_rss_bytes": max(r["peak_rss_bytes"] for r in agg),
        "trained_client_cpu_s": statistics.fmean(_busy_cpu(r) for r in trained if r["round"] >= 1),
        # whole run: a node fetches its key set once per key epoch (here, in round 0)
        "key_sets_served": keys["secret_sets"] + keys["public_sets"],
        "key_service_bytes": keys["bytes_sent"],
        "key_service_cpu_s": keys["cpu_s"],
        "client_records": len(clients_rounds),
        "rounds_completed": sum(r["kind"] == "round" for r in records),
        "trained_per_round": len(trained) / rounds,
        "completes": sum(r["kind"] == "round" for r in records) == rounds and len(trained) == rounds * per_round,
        "peak_memory_bytes": memory.peak,
        "peak_memory_processes": memory.peak_processes,
    }


def _busy_cpu(rec: dict[str, Any]) -> float:
    return sum(p["cpu_s"] for name, p in rec["phases"].items() if name != "wait")


def measure_run(clients: int, mode: str, rounds: int = 3) -> dict[str, Any]:
    """One run at this scale: the figures above, from its records and the memory sampler."""
    with tempfile.TemporaryDirectory() as tmp, MemorySampler() as memory:
        began = time.time()
        results = Runner(parse_suite(scale_suite(clients, mode, rounds)), Path(tmp)).run()
        wall = time.time() - began
        records = [r.to_json() for r in read_records(results).records]
    configured = next(r["time"] for r in records if r["kind"] == "configuration")
    setups = [r for r in records if r["kind"] == "party_setup"]
    agg = [r for r in records if r["kind"] == "party_round" and r["role"] == "aggregator" and r["round"] >= 1]
    keygen = next(r for r in records if r["kind"] == "keygen")
    workers = [r for r in records if r["kind"] == "pool_worker"]
    setup_wall = max(r["time"] for r in setups) - configured
    return {
        "clients": clients,
        "mode": mode,
        "adapter": CONFIGS[mode].get("adapter", "plain"),
        "rounds": rounds,
        "pool_workers": len(workers),
        "wall_s": wall,
        "setup_wall_s": setup_wall,
        "setup_wall_s_per_client": setup_wall / clients,
        "round_wall_s": statistics.fmean(r["round_wall_s"] for r in agg),
        "aggregator_cpu_s_per_round": statistics.fmean(_busy_cpu(r) for r in agg),
        "aggregator_bytes_received_per_round": statistics.fmean(r["bytes_received"] for r in agg),
        "aggregator_bytes_sent_per_round": statistics.fmean(r["bytes_sent"] for r in agg),
        "aggregator_peak_rss_bytes": max(r["peak_rss_bytes"] for r in agg),
        "key_authority_cpu_s_per_epoch": sum(p["cpu_s"] for p in keygen["phases"].values()),
        "key_authority_distribute_cpu_s": keygen["phases"]["distribute"]["cpu_s"],
        "key_authority_bytes_per_epoch": keygen["bytes_sent"],
        "key_authority_peak_rss_bytes": keygen["peak_rss_bytes"],
        "pool_worker_peak_rss_bytes": max((w["peak_rss_bytes"] for w in workers), default=None),
        "peak_memory_bytes": memory.peak,
        "peak_memory_processes": memory.peak_processes,
    }


SLOPED = (
    "aggregator_cpu_s_per_round",
    "aggregator_bytes_received_per_round",
    "aggregator_peak_rss_bytes",
    "key_authority_cpu_s_per_epoch",
    "key_authority_bytes_per_epoch",
    "setup_wall_s",
    "peak_memory_bytes",
)


def slopes(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per figure: the least-squares line against the client count (per-client slope, intercept)."""
    n = np.array([r["clients"] for r in rows], dtype=float)
    out = {}
    for key in SLOPED:
        if len(set(n)) < 2:
            break
        slope, intercept = np.polyfit(n, np.array([r[key] for r in rows], dtype=float), 1)
        out[key] = {"per_client": float(slope), "intercept": float(intercept)}
    return out


@study(
    "scale",
    options=(Option("--scale-clients", "clients", "client counts (default 8,32,128,256)", ints),),
)
def scale(clients: tuple[int, ...] = CLIENTS, rounds: int = 3, flower_sim: bool = True) -> dict[str, Any]:
    """Aggregator and key-authority costs per round against the number of clients (8-256; 1,000 on flower-sim)."""
    modes = [m for m, config in CONFIGS.items() if "adapter" not in config or status(str(config["adapter"])).available]
    rows = [measure_run(n, mode, rounds) for mode in modes for n in clients]
    sim = [measure_sim_run(mode=mode) for mode in modes] if flower_sim and _has_ray() else []
    goal_row = next((r for r in rows if r["clients"] == GOAL["clients"] and r["mode"] == GOAL["mode"]), None)
    return {
        "benchmark": "scale",
        "model": "mlp (digits, hidden 16)",
        "hosting": "pool, one worker per core",
        "rows": rows,
        "slopes": {mode: slopes([r for r in rows if r["mode"] == mode]) for mode in modes},
        "flower_sim": sim,
        "flower_sim_goal": {
            "clients": SIM_CLIENTS,
            "clients_per_round": SIM_PER_ROUND,
            "completes": bool(sim) and all(point["completes"] for point in sim),
        },
        "goal": {
            **GOAL,
            "measured_wall_s": goal_row["wall_s"] if goal_row else None,
            "measured_peak_memory_bytes": goal_row["peak_memory_bytes"] if goal_row else None,
            "meets_goal": bool(
                goal_row
                and goal_row["wall_s"] <= GOAL["wall_s"]
                and goal_row["peak_memory_bytes"] <= GOAL["peak_memory_bytes"]
            ),
        },
    }


def _has_ray() -> bool:
    try:
        import flwr.simulation  # noqa: F401
        import ray  # noqa: F401
    except ImportError:
        return False
    return True
