"""Compact HE (``seal-bfv``) against the per-layer TenSEAL CKKS N=8192 baseline, measured in the same run.

``compact_round``: FedNIC's CNN (cnn_dropout, 1,206,590 parameters), 2 clients, per client per
round: upload and download bytes per value (ratio to float32 and to Flower SecAgg+'s 8 B/value), HE
CPU (client encrypt + serialize + deserialize + decrypt, plus the aggregator's aggregate CPU per
client), and offload with the compact encoding (host CPU saved, engine CPU). ``compact_accuracy``:
20 rounds on digits and on the FEMNIST sample, raw vs 16- and 8-bit values: final accuracy and the
max error against plaintext FedAvg every round, beside the adapter's stated precision.
Goals are reported as booleans computed from this run's figures; nothing here is a test.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from hebench.analysis.summary import summarize_run
from hebench.bench.fl_round import FEMNIST_SAMPLE, bench_data
from hebench.bench.registry import Option, count, study
from hebench.config import parse_suite
from hebench.protections import get_mode
from hebench.results import read_records
from hebench.results.records import Record
from hebench.runtime.runner import Runner

CLIENT_HE_PHASES = ("encrypt", "serialize", "deserialize", "decrypt")
SECAGG_BYTES_PER_VALUE = 8.0  # Flower SecAgg+: masked values travel as 64-bit integers
HEADROOM = 64  # clients the 16-bit and 8-bit layouts must leave room for
BASELINE = "per-layer CKKS N=8192"
OFFLOAD_16 = "offload seal-bfv 16-bit N=16384"
TUNED_RING = 16384  # `hebench tune --model cnn_dropout --clients 64`: same bytes as the smallest ring, less CPU
COMPACT_16_TUNED = f"seal-bfv 16-bit N={TUNED_RING}"
COMPACT_16, COMPACT_8 = "seal-bfv 16-bit", "seal-bfv 8-bit"


def femnist_sample() -> Path | None:
    """The FEMNIST sample shipped in datasets/femnist-sample (``HEBENCH_FEMNIST_SAMPLE`` points elsewhere)."""
    path = Path(os.environ.get("HEBENCH_FEMNIST_SAMPLE", FEMNIST_SAMPLE))
    return path if path.is_dir() else None


def compact_params(bits: int, clip: float, ring_degree: int | None = None) -> dict[str, Any]:
    ring = {} if ring_degree is None else {"ring_degree": ring_degree}
    return {"bits": bits, "clip": clip, "max_summands": HEADROOM, **ring}


def round_suite(data: dict[str, Any], rounds: int, offload: bool) -> dict[str, Any]:
    ckks = {"ring_degree": 8192, "coeff_mod_bits": [60, 40, 40, 60], "scale_bits": 40}
    configs: list[dict[str, Any]] = [
        {"mode": "raw"},
        {"name": BASELINE, "mode": "host-he", "adapter": "tenseal-ckks", "params": ckks, "packing": "per-layer"},
        {"name": COMPACT_16, "mode": "host-he", "adapter": "seal-bfv", "params": compact_params(16, 1.0)},
        {"name": COMPACT_8, "mode": "host-he", "adapter": "seal-bfv", "params": compact_params(8, 1.0)},
        {
            "name": COMPACT_16_TUNED,
            "mode": "host-he",
            "adapter": "seal-bfv",
            "params": compact_params(16, 1.0, TUNED_RING),
        },
        {"name": "seal-ckks 16-bit", "mode": "host-he", "adapter": "seal-ckks", "params": compact_params(16, 1.0)},
    ]
    if offload:
        configs.append(
            {
                "name": OFFLOAD_16,
                "mode": "offload",
                "adapter": "seal-bfv",
                "params": compact_params(16, 1.0, TUNED_RING),
            }
        )
    return {
        "name": "bench-compact-round",
        "data": data,
        "model": {"name": "cnn_dropout"},
        "training": {"rounds": rounds, "local_steps": 1, "batch_size": 32, "lr": 0.03},
        "configurations": configs,
        "measure": {"timeout_s": 3600},
    }


def _run(suite: dict[str, Any]) -> list[Record]:
    with tempfile.TemporaryDirectory() as tmp:
        return read_records(Runner(parse_suite(suite), Path(tmp)).run()).records


def _he_cpu(records: list[dict[str, Any]], label: str, clients: int) -> float | None:
    """Mean HE CPU per client per round: the client's HE phases plus its share of the aggregation."""
    trained = [
        r
        for r in records
        if r.get("kind") == "party_round" and r.get("config") == label and r.get("role") == "client"
        if "train" in r["phases"]
    ]
    aggs = [r for r in records if r.get("kind") == "party_round" and r.get("config") == label and r["role"] != "client"]
    if not trained:
        return None

    def phases(rec: dict[str, Any]) -> dict[str, Any]:
        return rec["engine"]["phases"] if "engine" in rec else rec["phases"]

    client = sum(sum(phases(r).get(p, {}).get("cpu_s", 0.0) for p in CLIENT_HE_PHASES) for r in trained) / len(trained)
    aggregate = sum(a["phases"].get("aggregate", {}).get("cpu_s", 0.0) for a in aggs) / max(len(aggs), 1)
    return client + aggregate / clients


def _precision(records: list[dict[str, Any]], label: str) -> float | None:
    keygen = next((r for r in records if r.get("kind") == "keygen" and r.get("config") == label), None)
    return None if keygen is None else keygen["info"]["precision"]


@study("compact_round")
def compact_round(rounds: int = 3) -> dict[str, Any]:
    """Compact HE (seal-bfv) against per-layer TenSEAL CKKS on FedNIC's CNN: bytes, HE CPU, offload, per client
    per round."""
    data_path = femnist_sample()
    data = bench_data(data_path)
    typed = _run(round_suite(data, rounds, offload=True))
    summary = {row.config: row.to_json() for row in summarize_run(typed)}
    records = [r.to_json() for r in typed]
    rows = []
    for label, row in summary.items():
        values = row["parameters"]
        upload, download = row["upload_bytes_per_client_round"], row["download_bytes_per_client_round"]
        rows.append(
            {
                "config": label,
                "mode": row["mode"],
                "adapter": row["adapter"],
                "upload_bytes_per_value": upload / values,
                "upload_vs_float32": upload / (4 * values),
                "download_bytes_per_value": download / values,
                "he_cpu_s_per_client_round": _he_cpu(records, label, data["clients"]),
                "host_cpu_s_per_round": row["client_cpu_s_per_round"],
                "engine_cpu_s_per_round": row["engine_cpu_s_per_round"],
                "max_abs_error": row["max_abs_error"],
                "stated_precision": _precision(records, label),
            }
        )
    by = {r["config"]: r for r in rows}
    base, c16, c8, off = by[BASELINE], by[COMPACT_16], by[COMPACT_8], by[OFFLOAD_16]
    tuned = by[COMPACT_16_TUNED]
    offload = {
        "host_cpu_s_host_he": tuned["host_cpu_s_per_round"],
        "host_cpu_s_offload": off["host_cpu_s_per_round"],
        "host_cpu_s_raw": by["raw"]["host_cpu_s_per_round"],
        "host_cpu_saved_vs_host_he": 1 - off["host_cpu_s_per_round"] / tuned["host_cpu_s_per_round"],
        "engine_cpu_s": off["engine_cpu_s_per_round"],
        "he_cpu_s_in_host_he": tuned["he_cpu_s_per_client_round"],
    }
    ratios = {
        label: base["he_cpu_s_per_client_round"] / by[label]["he_cpu_s_per_client_round"]
        for label in (COMPACT_16, COMPACT_16_TUNED, COMPACT_8)
    }
    cpu_ratio = max(ratios[COMPACT_16], ratios[COMPACT_16_TUNED])
    goals = {
        "16-bit upload <= 1.5x float32": c16["upload_vs_float32"] <= 1.5,
        "8-bit upload < 1.0x float32": c8["upload_vs_float32"] < 1.0,
        "both <= SecAgg+ 8 B/value": max(c16["upload_bytes_per_value"], c8["upload_bytes_per_value"])
        <= SECAGG_BYTES_PER_VALUE,
        "16-bit HE CPU >= 10x below the per-layer CKKS baseline": cpu_ratio >= 10.0,
        "max error within stated precision": all(
            r["max_abs_error"] <= r["stated_precision"]
            for r in rows
            if r["stated_precision"] and not get_mode(r["mode"]).baseline
        ),
    }
    return {
        "benchmark": "compact_round_cnn_dropout",
        "dataset": "femnist-sample" if data_path else "digits",
        "parameters": summary["raw"]["parameters"],
        "clients": data["clients"],
        "headroom_clients": HEADROOM,
        "he_cpu_ratio_baseline_over": ratios,
        "offload_with_compact_16": offload,
        "rows": rows,
        "goals": goals,
    }


def accuracy_suite(data: dict[str, Any], model: dict[str, Any], training: dict[str, Any], clip: float) -> dict:
    return {
        "name": "bench-compact-accuracy",
        "data": data,
        "model": model,
        "training": training,
        "configurations": [
            {"mode": "raw"},
            {"name": COMPACT_16, "mode": "host-he", "adapter": "seal-bfv", "params": compact_params(16, clip)},
            {"name": COMPACT_8, "mode": "host-he", "adapter": "seal-bfv", "params": compact_params(8, clip)},
        ],
        "measure": {"timeout_s": 3600},
    }


def _accuracy_rows(records: list[dict[str, Any]]) -> dict[str, Any]:
    rounds: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        if r.get("kind") == "round":
            rounds.setdefault(r["config"], []).append(r)
    out = {}
    raw_acc = rounds["raw"][-1]["accuracy"]
    for label, recs in rounds.items():
        precision = _precision(records, label)
        errors = [r.get("max_abs_error", 0.0) for r in recs]
        out[label] = {
            "rounds": len(recs),
            "final_accuracy": recs[-1]["accuracy"],
            "accuracy_delta_pp_vs_raw": 100 * (recs[-1]["accuracy"] - raw_acc),
            "max_abs_error_worst_round": max(errors),
            "stated_precision": precision,
            "error_within_precision_every_round": None if precision is None else all(e <= precision for e in errors),
        }
    return out


@study(
    "compact_accuracy",
    options=(Option("--compact-rounds", "rounds", "rounds of the accuracy runs (default 20)", count),),
)
def compact_accuracy(rounds: int = 20) -> dict[str, Any]:
    """Final accuracy and per-round max error of compact HE (16- and 8-bit) against raw, on digits and the FEMNIST
    sample."""
    runs = {
        "digits": accuracy_suite(
            {"dataset": "digits", "clients": 2}, {"name": "mlp", "hidden": 16}, {"rounds": rounds, "lr": 0.1}, 2.0
        )
    }
    if (sample := femnist_sample()) is not None:
        runs["femnist-sample"] = accuracy_suite(
            bench_data(sample),
            {"name": "cnn_dropout"},
            {"rounds": rounds, "local_steps": 1, "batch_size": 32, "lr": 0.03},
            1.0,
        )
    results = {name: _accuracy_rows([r.to_json() for r in _run(suite)]) for name, suite in runs.items()}
    goals = {
        f"{name}: 16-bit within 0.1 pp of raw": abs(rows[COMPACT_16]["accuracy_delta_pp_vs_raw"]) <= 0.1
        for name, rows in results.items()
    }
    goals["max error within stated precision every round"] = all(
        row["error_within_precision_every_round"] is not False for rows in results.values() for row in rows.values()
    )
    return {"benchmark": "compact_accuracy", "rounds": rounds, "datasets": results, "goals": goals}
