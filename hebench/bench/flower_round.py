"""The same FedAvg rounds on hebench's local runner and on Flower's deployment engine, compared.

Both run in this process's benchmark, one after the other, with the same suite
(data, seed, initial model): per training client and round, the host's CPU
per phase and the bytes it sends and receives; the aggregator's CPU. Ratios
are Flower over local, measured in the same run. Flower's round wall time
includes its polling interval and a fresh ClientApp process per message: it
is reported, never compared with the local runner's. Round 0 is left out.
"""

from __future__ import annotations

import statistics
import tempfile
from pathlib import Path
from typing import Any

from hebench.bench.fl_round import FEMNIST_SAMPLE, bench_data
from hebench.bench.registry import study
from hebench.config import parse_suite
from hebench.results import read_records
from hebench.results.records import ConfigurationRecord, PartyRoundRecord, Record
from hebench.runtime.flower import require_flower
from hebench.runtime.runner import Runner

HOST_PHASES = ("train", "encrypt", "serialize", "deserialize", "decrypt", "evaluate", "keys", "connect")


def flower_suite(rounds: int, adapter: str, model: str, data_path: Path | None) -> dict[str, Any]:
    return {
        "name": "bench-flower",
        "data": bench_data(data_path),
        "model": {"name": model},
        "training": {"rounds": rounds, "local_steps": 1, "batch_size": 32, "lr": 0.03},
        "configurations": [{"mode": "raw"}, {"mode": "host-he", "adapter": adapter}],
        "measure": {"timeout_s": 3600},
    }


def _mean(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.fmean(present) if present else None


def measure(records: list[Record]) -> dict[str, dict[str, Any]]:
    """Per configuration: means per training client and round (round 0 left out)."""
    out: dict[str, dict[str, Any]] = {}
    for label in {r.config for r in records if isinstance(r, ConfigurationRecord)}:
        mine = [r for r in records if isinstance(r, PartyRoundRecord) and r.config == label and r.round > 0]
        trained = [r for r in mine if r.trained]
        aggs = [r for r in mine if r.role == "aggregator"]
        phases = {
            ph: _mean([r.phases[ph].cpu_s for r in trained if ph in r.phases])
            for ph in HOST_PHASES
            if any(ph in r.phases for r in trained)
        }
        out[label] = {
            "host_cpu_s": _mean([r.phases.cpu_s(exclude=("wait",)) for r in trained]),
            "host_cpu_s_by_phase": phases,
            "flower_process_cpu_s": _mean([r.process_cpu_s for r in trained]),
            "upload_bytes": _mean([r.bytes_sent for r in trained]),
            "download_bytes": _mean([r.bytes_received for r in trained]),
            "aggregator_cpu_s": _mean([a.phases.cpu_s(exclude=("wait", "receive")) for a in aggs]),
            "round_wall_s": _mean([a.round_wall_s for a in aggs]),
            "flower_round_wall_s": _mean([a.flower_round_wall_s for a in aggs]),
        }
    return out


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


@study("flower_round")
def flower_round(rounds: int = 3, adapter: str = "tenseal-ckks", model: str = "cnn_dropout") -> dict[str, Any]:
    """FedNIC's CNN rounds on the local runtime and on Flower: per-phase CPU and bytes as Flower/local ratios
    (hebench[flower])."""
    require_flower()
    from hebench.runtime.flower.runner import FlowerRuntime
    from hebench.runtime.local.processes import LocalRuntime

    data_path = FEMNIST_SAMPLE if FEMNIST_SAMPLE.is_dir() else None
    suite = parse_suite(flower_suite(rounds, adapter, model, data_path))
    measured = {}
    with tempfile.TemporaryDirectory() as tmp:
        for runtime, engine in (("local", LocalRuntime()), ("flower", FlowerRuntime())):
            results = Runner(suite, Path(tmp) / runtime, runtime=engine).run()
            measured[runtime] = measure(read_records(results).records)
    label = f"host-he/{adapter}"
    local, flower = measured["local"], measured["flower"]
    he_phases = ("encrypt", "serialize", "deserialize", "decrypt")
    he_cpu = {
        runtime: sum(m[label]["host_cpu_s_by_phase"].get(ph) or 0.0 for ph in he_phases)
        for runtime, m in measured.items()
    }
    return {
        "benchmark": "flower_round",
        "model": model,
        "dataset": "femnist-sample" if data_path else "digits",
        "clients": 2,
        "rounds_measured": rounds - 1,
        "per_runtime": measured,
        "flower_over_local": {
            "host_cpu": {c: _ratio(flower[c]["host_cpu_s"], local[c]["host_cpu_s"]) for c in local},
            "he_phase_cpu": _ratio(he_cpu["flower"], he_cpu["local"]),
            "upload_bytes": {c: _ratio(flower[c]["upload_bytes"], local[c]["upload_bytes"]) for c in local},
            "aggregator_cpu": {c: _ratio(flower[c]["aggregator_cpu_s"], local[c]["aggregator_cpu_s"]) for c in local},
        },
        "note": "Flower's round wall time includes its polling interval and a ClientApp process per message; "
        "it is not comparable with the local runner's round time",
    }
