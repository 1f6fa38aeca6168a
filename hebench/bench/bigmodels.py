"""Big models: per-party peak memory, time and bytes against the parameter count, streamed end to end.

Points (parameters as built here): CNN_DropOut on digits (1.2 M), ResNet-18 and ResNet-50 on natural
image patches (11 M, 24 M with 100 classes), and a BERT-base-sized encoder on generated token sequences
(109 M). ResNet-50 and BERT are randomly initialised (no weights can be downloaded here) and BERT's data
is synthetic: their rows measure cost, not accuracy. Modes: raw, host-HE with TenSEAL CKKS (N=8192),
compact host-HE (``seal-bfv``, 16-bit values, the default clip with per-tensor range scales, headroom
for the clients only: FedAvg weights applied before encryption), and ``secagg`` (SecAgg+ at its
defaults: masked values in the 2^32 ring, 4 bytes each, the aggregator's running sum in the same width).
CKKS is not run at 109 M: one update would be about 8.9 GB (81 bytes per value), beyond what this shared
24 GB machine can hold for several clients; its costs there are the fitted line's.

Each point is one ``hebench run`` (2 rounds: round 0 warms up, round 1 is measured) with every client
in its own process, so each party's peak RSS is its own (``VmHWM``, from its round records). Goals (per
party and mode, on this machine): a client within 1.5x the same model's raw client, the aggregator
within one encrypted (or masked) update + 512 MB whatever the number of clients; ResNet-50 under CKKS with
4 clients and the 109 M encoder under compact-16 with 8 clients complete. A point needing more than the memory available
is skipped, with the reason, never run into the machine's limit. Per-parameter costs are least-squares
lines over the points of each mode.

``unequal_counts``: FEMNIST's compact 16-bit row (two writers of the shipped sample, unequal sample counts)
with exact weights' headroom (``max_summands: 4096``) and with the weights applied before encryption
(``max_summands: 2``): bytes per value (goal: at most 4) and max error against the stated precision.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import psutil

from hebench.bench.registry import study
from hebench.config import parse_suite
from hebench.crypto.registry import status
from hebench.protections import get_mode
from hebench.results import read_records
from hebench.runtime.runner import Runner

MB = 1 << 20
AGGREGATOR_SLACK = 512 * MB
CLIENT_RATIO = 1.5
MODES: dict[str, dict[str, Any]] = {
    "raw": {"mode": "raw"},
    "ckks": {"mode": "host-he", "adapter": "tenseal-ckks"},
    "compact-16": {"mode": "host-he", "adapter": "seal-bfv", "params": {"bits": 16}},
    "secagg": {"mode": "secagg"},  # SecAgg+ at its defaults: modulus 2^32, so 4 bytes a masked value
}


@dataclass(frozen=True)
class Point:
    model: str
    dataset: str
    clients: int
    modes: tuple[str, ...]
    needs_gb: float  # memory the whole run may take at its peak (checked against what is available)
    batch: int = 8
    goal: str | None = None  # the mode this point's goal is about


POINTS = (
    Point("cnn_dropout", "digits", 2, ("raw", "ckks", "compact-16", "secagg"), 3),
    Point("resnet18", "natural", 2, ("raw", "ckks", "compact-16", "secagg"), 6),
    Point("resnet50", "natural", 4, ("raw", "ckks", "compact-16", "secagg"), 12, goal="ckks"),
    # 8 clients of about 2.2 GB each (the round's global model held beside the trained one) + aggregator: ~19 GB
    Point("bert_base", "tokens", 8, ("raw", "compact-16", "secagg"), 19, batch=4, goal="compact-16"),
)


def point_suite(point: Point, modes: tuple[str, ...], rounds: int = 2) -> dict[str, Any]:
    configurations = []
    for mode in modes:
        config = {"name": mode, **MODES[mode]}
        if mode == "compact-16":
            config["params"] = {**config["params"], "max_summands": point.clients}
        configurations.append(config)
    return {
        "name": f"bench-bigmodels-{point.model}",
        "data": {"dataset": point.dataset, "clients": point.clients},
        "model": {"name": point.model},
        "training": {"rounds": rounds, "local_steps": 1, "batch_size": point.batch, "lr": 0.01},
        "configurations": configurations,
        "runtime": {"hosting": "process"},
        # the oracle keeps every client's update in the runner: off for the 109 M point (cost only)
        "measure": {"timeout_s": 3600, "setup_timeout_s": 1800, "decryption_error": point.model != "bert_base"},
    }


def _busy_cpu(rec: dict[str, Any], skip: tuple[str, ...] = ("wait",)) -> float:
    return sum(p["cpu_s"] for name, p in rec["phases"].items() if name not in skip)


def _row(point: Point, mode: str, records: list[dict[str, Any]], parameters: int) -> dict[str, Any]:
    mine = [r for r in records if r.get("config") == mode]
    parties = [r for r in mine if r["kind"] == "party_round"]
    clients = [r for r in parties if r["role"] == "client"]
    steady_agg = [r for r in parties if r["role"] == "aggregator" and r["round"] >= 1]
    steady_trained = [r for r in clients if r["round"] >= 1 and "train" in r["phases"]]
    rounds = [r for r in mine if r["kind"] == "round"]
    failed = [r for r in mine if r["kind"] == "run_failed"]
    upload = max((max(r["update_bytes"].values()) for r in steady_agg), default=None)
    return {
        "model": point.model,
        "mode": mode,
        "parameters": parameters,
        "clients": point.clients,
        "completes": len(rounds) == 2 and not failed,
        "failure": failed[0]["problem"] if failed else None,
        "client_peak_rss_bytes": max((r["peak_rss_bytes"] for r in clients), default=None),
        "aggregator_peak_rss_bytes": max(
            (r["peak_rss_bytes"] for r in parties if r["role"] == "aggregator"), default=None
        ),
        "upload_bytes_per_client": upload,
        "bytes_per_value": upload / parameters if upload else None,
        "round_wall_s": statistics.fmean(r["round_wall_s"] for r in steady_agg) if steady_agg else None,
        "client_cpu_s": statistics.fmean(_busy_cpu(r) for r in steady_trained) if steady_trained else None,
        "client_protection_cpu_s": (  # what the mode adds to a client's round: all but training and evaluation
            statistics.fmean(_busy_cpu(r, ("wait", "train", "evaluate")) for r in steady_trained)
            if steady_trained
            else None
        ),
        "aggregator_cpu_s": statistics.fmean(_busy_cpu(r) for r in steady_agg) if steady_agg else None,
        "max_abs_error": max((r.get("max_abs_error") or 0.0 for r in rounds), default=None),
        "range_scale_max": max((r.get("range_scale_max") or 1.0 for r in clients), default=None),
        "clipped_values": sum(r.get("clipped_values") or 0 for r in clients),
    }


def measure_point(point: Point, modes: tuple[str, ...] | None = None) -> list[dict[str, Any]]:
    """One run of every mode of ``point`` (or a skip row per mode, when memory is short)."""
    from hebench.models import build_model, parameter_count

    modes = tuple(
        m for m in (modes or point.modes) if "adapter" not in MODES[m] or status(MODES[m]["adapter"]).available
    )
    shape = {"digits": (1, 28, 28), "natural": (3, 32, 32), "tokens": (1, 1, 32)}[point.dataset]
    classes = {"digits": 10, "natural": 100, "tokens": 4}[point.dataset]
    parameters = parameter_count(build_model(point.model, shape, classes))
    available = psutil.virtual_memory().available / (1 << 30)
    if available < point.needs_gb:
        reason = f"skipped: {available:.1f} GB available, the run needs about {point.needs_gb:g} GB"
        return [{"model": point.model, "mode": m, "parameters": parameters, "skipped": reason} for m in modes]
    with tempfile.TemporaryDirectory() as tmp:
        began = time.time()
        try:
            Runner(parse_suite(point_suite(point, modes)), Path(tmp)).run()
        except Exception:  # a failed configuration is recorded (run_failed) and reported as not completing
            pass
        wall = time.time() - began
        path = Path(tmp) / "results.jsonl"
        records = [r.to_json() for r in read_records(path).records] if path.exists() else []
    rows = [_row(point, mode, records, parameters) for mode in modes]
    for row in rows:
        row["run_wall_s"] = wall
    return rows


def _baseline(label: str) -> bool:
    """The row of MODES' unprotected configuration (every memory goal is measured against it)."""
    return get_mode(MODES[label]["mode"]).baseline


def within_goals(rows: list[dict[str, Any]]) -> None:
    """Each row's memory goals against the same model's raw client (same run), in place."""
    raw = {r["model"]: r for r in rows if _baseline(r["mode"]) and r.get("client_peak_rss_bytes")}
    for row in rows:
        if row.get("skipped") or not row.get("client_peak_rss_bytes"):
            continue
        reference = raw.get(row["model"])
        ratio = row["client_peak_rss_bytes"] / reference["client_peak_rss_bytes"] if reference else None
        budget = (row["upload_bytes_per_client"] or 0) + AGGREGATOR_SLACK
        row["client_rss_vs_raw"] = ratio
        row["aggregator_budget_bytes"] = budget
        row["client_within_goal"] = ratio is not None and ratio <= CLIENT_RATIO
        row["aggregator_within_goal"] = row["aggregator_peak_rss_bytes"] <= budget


FITTED = (
    "client_peak_rss_bytes",
    "aggregator_peak_rss_bytes",
    "upload_bytes_per_client",
    "client_protection_cpu_s",
    "round_wall_s",
)


def fits(rows: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, float]]]:
    """Per mode and figure: the least-squares line against the parameter count (per parameter, intercept)."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for mode in MODES:
        measured = [r for r in rows if r["mode"] == mode and r.get("completes")]
        if len({r["parameters"] for r in measured}) < 2:
            continue
        n = np.array([r["parameters"] for r in measured], dtype=float)
        out[mode] = {}
        for key in FITTED:
            y = np.array([r[key] for r in measured], dtype=float)
            slope, intercept = np.polyfit(n, y, 1)
            out[mode][key] = {"per_parameter": float(slope), "intercept": float(intercept), "points": len(n)}
    return out


def unequal_counts(rounds: int = 2) -> dict[str, Any]:
    """FEMNIST's compact-16 row (CNN_DropOut, 2 writers of the shipped sample: unequal sample counts) with the
    headroom exact weights need (``max_summands: 4096``) and with weights applied before encryption (2)."""
    from hebench.data.cache import FEMNIST_SAMPLE

    if not (FEMNIST_SAMPLE / "train").is_dir() or not status("seal-bfv").available:
        return {"skipped": "needs the shipped FEMNIST sample and TenSEAL"}
    params = {"bits": 16, "clip": 1.0, "ring_degree": 16384}
    compact = {"mode": "host-he", "adapter": "seal-bfv"}
    suite = {
        "name": "bench-bigmodels-unequal",
        "data": {"dataset": "femnist", "clients": 2, "images_per_client": 1600, "sample": True},
        "model": {"name": "cnn_dropout"},
        "training": {"rounds": rounds, "local_steps": 1, "batch_size": 32, "lr": 0.03},
        "configurations": [
            {"name": "headroom-4096", **compact, "params": {**params, "max_summands": 4096}},
            {"name": "pre-weighted", **compact, "params": {**params, "max_summands": 2}},
        ],
    }
    with tempfile.TemporaryDirectory() as tmp:
        Runner(parse_suite(suite), Path(tmp)).run()
        records = [r.to_json() for r in read_records(Path(tmp) / "results.jsonl").records]
    out: dict[str, Any] = {}
    for name in ("headroom-4096", "pre-weighted"):
        parameters = next(r["parameters"] for r in records if r["kind"] == "configuration" and r["config"] == name)
        agg = [r for r in records if r["kind"] == "party_round" and r["role"] == "aggregator" and r["config"] == name]
        rounds_done = [r for r in records if r["kind"] == "round" and r["config"] == name]
        upload = max(max(r["update_bytes"].values()) for r in agg)
        out[name] = {
            "weights": agg[0]["weights"],
            "bytes_per_value": upload / parameters,
            "max_abs_error": max(r["max_abs_error"] for r in rounds_done),
        }
    from hebench.crypto import create_adapter

    stated = create_adapter("seal-bfv", {**params, "max_summands": 2}).info().precision
    out["stated_precision"] = stated
    out["meets_goal"] = out["pre-weighted"]["bytes_per_value"] <= 4.0 and out["pre-weighted"]["max_abs_error"] <= stated
    return out


@study("bigmodels")
def bigmodels(points: tuple[Point, ...] = POINTS) -> dict[str, Any]:
    """Per-party peak memory, time and bytes from 1.2 M to 109 M parameters, per mode, streamed end to end."""
    rows = [row for point in points for row in measure_point(point)]
    within_goals(rows)
    goals = []
    for point in points:
        if point.goal is None:
            continue
        row = next((r for r in rows if r["model"] == point.model and r["mode"] == point.goal), None)
        same_run = [r for r in rows if r["model"] == point.model and not r.get("skipped")]
        goals.append(
            {
                "model": point.model,
                "mode": point.goal,
                "clients": point.clients,
                "rounds": 2,
                "completes": bool(row and row.get("completes")),
                "every_party_within_memory_goal": bool(same_run)
                and all(r.get("client_within_goal") and r.get("aggregator_within_goal") for r in same_run),
                "within_memory_goal": {  # each mode's parties, measured in the same run
                    r["mode"]: {"client": r.get("client_within_goal"), "aggregator": r.get("aggregator_within_goal")}
                    for r in same_run
                },
                "skipped": row.get("skipped") if row else "not measured",
            }
        )
    return {
        "benchmark": "bigmodels",
        "memory_goal": {"client_vs_raw": CLIENT_RATIO, "aggregator_slack_bytes": AGGREGATOR_SLACK},
        "note": "resnet50, vit and bert_base rows are randomly initialised and bert_base trains on generated tokens: "
        "cost, not accuracy. CKKS is not run at 109 M parameters (about 8.9 GB per update).",
        "rows": rows,
        "fits": fits(rows),
        "goals": goals,
        "unequal_counts": unequal_counts(),
    }
