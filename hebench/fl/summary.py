"""Per-configuration summary of a run's records: the table ``hebench run`` prints."""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import Any

PHASES = ("train", "encrypt", "serialize", "send", "wait", "deserialize", "decrypt", "evaluate")
AGG_PHASES = ("receive", "deserialize", "aggregate", "serialize", "send", "wait")


def _mean(values: list[float]) -> float | None:
    return statistics.fmean(values) if values else None


def summarize_run(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
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
        cpu = [sum(p["cpu_s"] for k, p in c["phases"].items() if k != "wait") for c in trained]
        phase_wall = {ph: _mean([c["phases"][ph]["wall_s"] for c in trained if ph in c["phases"]]) for ph in PHASES}
        agg_wall = {
            ph: _mean([a["phases"][ph]["wall_s"] for a in aggs[label] if ph in a["phases"]]) for ph in AGG_PHASES
        }
        rows.append(
            {
                "config": label,
                "mode": conf.get("mode"),
                "adapter": conf.get("adapter"),
                "packing": conf.get("packing"),
                "parameters": conf.get("parameters"),
                "rounds_done": len(done),
                "accuracy": last.get("accuracy"),
                "loss": last.get("loss"),
                "max_abs_error": max((r.get("max_abs_error", 0.0) for r in done.values()), default=None),
                "client_cpu_s_per_round": _mean(cpu),
                "client_cpu_s_spread": (min(cpu), max(cpu)) if cpu else None,
                "upload_bytes_per_client_round": _mean([c["bytes_sent"] for c in trained]),
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
    return rows


def _ratio(row: dict, base: dict | None, key: str) -> float | None:
    if base is None or not row.get(key) or not base.get(key):
        return None
    return row[key] / base[key]
