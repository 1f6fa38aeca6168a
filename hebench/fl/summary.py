"""Per-configuration summary of a run's records: the table ``hebench run`` prints."""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import Any

PHASES = ("train", "encrypt", "serialize", "send", "wait", "deserialize", "decrypt", "evaluate")
AGG_PHASES = ("receive", "deserialize", "aggregate", "serialize", "send", "wait")


def _mean(values: list[float]) -> float | None:
    return statistics.fmean(values) if values else None


ENGINE_PHASES = ("encrypt", "serialize", "deserialize", "decrypt")


def _host_cpu(rec: dict[str, Any]) -> float:
    return sum(p["cpu_s"] for k, p in rec["phases"].items() if k != "wait")


def _engine(rec: dict[str, Any], key: str) -> float | None:
    engine = rec.get("engine")
    if engine is None:
        return None
    if key == "cpu_s":
        return sum(p["cpu_s"] for k, p in engine["phases"].items() if k not in ("wait", "receive"))
    return engine[key]


def summarize_run(records: list[dict[str, Any]], calibration: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """One row per configuration, in run order; overheads are ratios to the ``raw`` row."""
    configs: dict[str, dict[str, Any]] = {}
    rounds: dict[str, dict[int, dict]] = defaultdict(dict)
    clients: dict[str, list[dict]] = defaultdict(list)
    aggs: dict[str, list[dict]] = defaultdict(list)
    keygen: dict[str, dict] = {}
    for rec in records:
        kind, label = rec.get("kind"), rec.get("config")
        if kind == "configuration":
            configs[label] = rec
        elif kind == "round":
            rounds[label][int(rec["round"])] = rec  # a resumed run's later record wins
        elif kind == "party_round" and rec.get("role") == "client":
            clients[label].append(rec)
        elif kind == "party_round" and rec.get("role") == "aggregator":
            aggs[label].append(rec)
        elif kind == "keygen":
            keygen[label] = rec
    rows = []
    for label, conf in configs.items():
        done = rounds.get(label, {})
        last = done[max(done)] if done else {}
        trained = [c for c in clients[label] if "train" in c.get("phases", {})]
        cpu = [_host_cpu(c) for c in trained]
        offload = conf.get("mode") == "offload"
        flower = conf.get("runtime") == "flower"  # the host itself sends the engine's ciphertext through Flower
        uploads = [_engine(c, "aggregator_bytes_sent") if offload and not flower else c["bytes_sent"] for c in trained]
        host_engine = [c.get("host_engine_bytes") if flower else c["bytes_sent"] + c["bytes_received"] for c in trained]
        phase_wall = {ph: _mean([c["phases"][ph]["wall_s"] for c in trained if ph in c["phases"]]) for ph in PHASES}
        agg_wall = {
            ph: _mean([a["phases"][ph]["wall_s"] for a in aggs[label] if ph in a["phases"]]) for ph in AGG_PHASES
        }
        rows.append(
            {
                "config": label,
                "mode": conf.get("mode"),
                "runtime": conf.get("runtime", "hebench"),
                "adapter": conf.get("adapter"),
                "packing": conf.get("packing"),
                "parameters": conf.get("parameters"),
                "rounds_done": len(done),
                "accuracy": last.get("accuracy"),
                "loss": last.get("loss"),
                "max_abs_error": max((r.get("max_abs_error", 0.0) for r in done.values()), default=None),
                "client_cpu_s_per_round": _mean(cpu),
                "client_cpu_s_spread": (min(cpu), max(cpu)) if cpu else None,
                "upload_bytes_per_client_round": _mean([u for u in uploads if u is not None]),
                "host_engine_bytes_per_round": _mean([b for b in host_engine if b is not None]) if offload else None,
                "engine_cpu_s_per_round": _mean([_engine(c, "cpu_s") for c in trained]) if offload else None,
                "engine_wall_s": {
                    ph: _mean([c["engine"]["phases"][ph]["wall_s"] for c in trained if ph in c["engine"]["phases"]])
                    for ph in ENGINE_PHASES
                }
                if offload
                else {},
                "engine_cores": trained[0]["engine"].get("cores") if offload and trained else None,
                "host_cores": trained[0].get("affinity") if trained else None,
                "round_wall_s": _mean([a["round_wall_s"] for a in aggs[label] if "round_wall_s" in a]),
                # Flower: all the CPU of the ClientApp processes of a round (one per message, start-up included)
                "flower_process_cpu_s_per_round": _mean([c["process_cpu_s"] for c in trained if "process_cpu_s" in c]),
                # Flower's round time includes its polling interval: reported apart, never compared with local runs
                "flower_round_wall_s": _mean(
                    [a["flower_round_wall_s"] for a in aggs[label] if "flower_round_wall_s" in a]
                ),
                "download_bytes_per_client_round": _mean([c["bytes_received"] for c in clients[label]]),
                "aggregator_cpu_s_per_round": _mean(
                    [
                        sum(p["cpu_s"] for k, p in a["phases"].items() if k not in ("wait", "receive"))
                        for a in aggs[label]
                    ]
                ),
                "client_wall_s": phase_wall,
                "aggregator_wall_s": agg_wall,
                "peak_rss_bytes": max((c["peak_rss_bytes"] for c in clients[label]), default=None),
                "keygen_s": keygen.get(label, {}).get("phases", {}).get("keygen", {}).get("wall_s"),
            }
        )
    raw = next((r for r in rows if r["mode"] == "raw"), None)
    for row in rows:
        row["cpu_overhead_vs_raw"] = _ratio(row, raw, "client_cpu_s_per_round")
        row["bytes_overhead_vs_raw"] = _ratio(row, raw, "upload_bytes_per_client_round")
        row["round_time_vs_raw"] = _ratio(row, raw, "round_wall_s")
        twin = row["config"].replace("offload/", "host-he/", 1)  # same adapter, packing and selective mask
        host_he = next((r for r in rows if r["config"] == twin), None)
        if row["mode"] == "offload":
            row["round_time_vs_host_he"] = _ratio(row, host_he, "round_wall_s")
            saved = _ratio(row, host_he, "client_cpu_s_per_round")
            row["host_cpu_saved_vs_host_he"] = None if saved is None else 1.0 - saved
            row["projected_engine_s"] = project(calibration, row) if calibration else None
    return rows


def project(calibration: dict[str, Any], row: dict[str, Any]) -> dict[str, Any] | None:
    """Engine phase times projected on the calibrated device: per-value costs measured there × values.

    Labelled projected, kept apart from measured figures.
    """
    sizes = calibration.get("adapters", {}).get(row["adapter"])
    if not sizes or not row.get("parameters"):
        return None
    size = min(sizes, key=lambda s: abs(int(s) - row["parameters"]))
    ops = sizes[size]["operations"]
    values = row["parameters"]
    return {
        "device": calibration.get("environment", {}).get("cpu_model"),
        "calibrated_at_size": int(size),
        "phases_s": {ph: ops[ph]["wall_s_per_value"] * values for ph in ENGINE_PHASES if ph in ops},
        "total_s": sum(ops[ph]["wall_s_per_value"] * values for ph in ENGINE_PHASES if ph in ops),
        "projected": True,
    }


def _ratio(row: dict, base: dict | None, key: str) -> float | None:
    if base is None or not row.get(key) or not base.get(key):
        return None
    return row[key] / base[key]
