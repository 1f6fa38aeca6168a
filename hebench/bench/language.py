"""Federated fine-tuning at GPT-2 small's size: LoRA adapters against full fine-tuning, under HE and SecAgg+.

One run of ``suites/language-gpt2.yaml`` (GPT-2 small's configuration, randomly initialised: cost, not quality;
8 Shakespeare roles as clients; 2 rounds, round 0 a warm-up): LoRA r=8 on the attention projections under raw,
compact HE (seal-bfv, 16-bit), CKKS, selective HE (10 %) and SecAgg+, and full fine-tuning under compact HE.
Per configuration: bytes each client uploads per round, CPU per round (a client's busy CPU, what the protection
adds to it, the aggregator's), and each party's peak memory against the raw LoRA client's (goal: within 1.5x for
every LoRA configuration). Then the ratios full-under-HE / LoRA-under-HE, measured in the same run, beside the
ratio of the values each update carries (what they would be if cost were proportional to the update's size).

Each configuration is a run of its own (one that fails, say full fine-tuning out of memory, is reported as not
completing, with its error, and the others are still measured). Every client runs in its own process so each
party's peak memory (``VmHWM``) is its own. Before the run the
free memory is checked: per fine-tuning kind (each configuration runs alone), the clients its peak needs are
counted against what is available, and when 8 do not fit the largest count that does is run instead, and said.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

from hebench.bench.registry import Option, count, study
from hebench.config import Suite
from hebench.config.catalog import shipped_suite
from hebench.config.load import load_suite
from hebench.errors import ParameterError
from hebench.results import read_records
from hebench.runtime.runner import Runner

GB = 1 << 30
CLIENT_RATIO = 1.5  # the goal: every LoRA configuration's parties within 1.5x the raw LoRA client's peak memory
# peak memory one GPT-2-small client takes (measured here, 8 LoRA clients: 2.05-2.20 GB; full fine-tuning with its
# update, the global model and the encrypted stream: 3.1 GB) and what the runner, the aggregator and client 0's
# evaluation of the global model (+0.9 GB LoRA, +1.1 GB full) add
CLIENT_GB = {"lora": 2.2, "full": 3.2}
FIXED_GB = 2.5
RAW, FULL = "lora/raw", "full/compact-bfv-16"
PAIRS = (("full/compact-bfv-16", "lora/compact-bfv-16"),)  # full under HE / LoRA under the same HE


def clients_that_fit(asked: int, available_gb: float, needs_full: bool) -> int:
    """The most clients (at most ``asked``, at least 0) whose peak memory fits in ``available_gb``."""
    per_client = CLIENT_GB["full" if needs_full else "lora"]
    return max(0, min(asked, int((available_gb - FIXED_GB) // per_client)))


def _busy_cpu(rec: dict[str, Any], skip: tuple[str, ...] = ("wait",)) -> float:
    return sum(p["cpu_s"] for name, p in rec["phases"].items() if name not in skip)


def _mean(values: list[float]) -> float | None:
    return statistics.fmean(values) if values else None


def configuration_row(label: str, records: list[dict[str, Any]]) -> dict[str, Any]:
    """One configuration's steady-round costs (rounds after the first) and every party's peak memory."""
    mine = [r for r in records if r.get("config") == label]
    conf = next((r for r in mine if r["kind"] == "configuration"), {})
    parties = [r for r in mine if r["kind"] == "party_round"]
    steady = [r for r in parties if r["round"] >= 1]
    trained = [r for r in steady if r["role"] == "client" and "train" in r["phases"]]
    aggregators = [r for r in steady if r["role"] == "aggregator"]
    failed = [r for r in mine if r["kind"] == "run_failed"]
    peaks: dict[str, int] = {}
    for r in parties:
        name = f"client-{r['client']}" if r["role"] == "client" else r["role"]
        if r.get("peak_rss_bytes"):
            peaks[name] = max(peaks.get(name, 0), r["peak_rss_bytes"])
    clients = len({r["client"] for r in parties if r["role"] == "client"})
    aggregator_cpu = _mean([_busy_cpu(r, ("wait", "receive")) for r in aggregators])
    return {
        "config": label,
        "clients": clients,
        "fine_tuning": (conf.get("fine_tuning") or {}).get("kind"),
        "update_values": conf.get("update_parameters"),
        "completes": bool(conf) and not failed and any(r["kind"] == "round" and r["round"] >= 1 for r in mine),
        "failure": failed[0]["problem"] if failed else None,
        "upload_bytes_per_client_round": _mean([float(r["bytes_sent"]) for r in trained]),
        "client_cpu_s_per_round": _mean([_busy_cpu(r) for r in trained]),
        # what the protection adds to a client's round: all but local training and evaluation
        "client_protection_cpu_s_per_round": _mean([_busy_cpu(r, ("wait", "train", "evaluate")) for r in trained]),
        "aggregator_cpu_s_per_round": aggregator_cpu,
        # per client it served: configurations may run with different client counts (full fine-tuning's peak)
        "aggregator_cpu_s_per_client_round": aggregator_cpu / clients if aggregator_cpu and clients else None,
        "round_wall_s": _mean([r["round_wall_s"] for r in aggregators if r.get("round_wall_s")]),
        "peak_rss_bytes": peaks,
        "client_peak_rss_bytes": max((v for k, v in peaks.items() if k.startswith("client-")), default=None),
    }


def memory_goals(rows: list[dict[str, Any]]) -> None:
    """Each party's peak memory against the raw LoRA client's (same run), in place."""
    raw = next((r for r in rows if r["config"] == RAW), None)
    reference = raw["client_peak_rss_bytes"] if raw else None
    for row in rows:
        if not reference or not row["peak_rss_bytes"]:
            continue
        ratios = {party: peak / reference for party, peak in row["peak_rss_bytes"].items()}
        row["peak_rss_vs_raw_client"] = ratios
        row["largest_vs_raw_client"] = max(ratios.values())
        row["within_goal"] = max(ratios.values()) <= CLIENT_RATIO


FIGURES = (
    "upload_bytes_per_client_round",
    "client_cpu_s_per_round",
    "client_protection_cpu_s_per_round",
    "aggregator_cpu_s_per_client_round",
    "client_peak_rss_bytes",
)


def full_over_lora(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Full fine-tuning under HE ÷ LoRA under the same HE, per figure, from this run."""
    by = {r["config"]: r for r in rows}
    out = []
    for full, lora in PAIRS:
        if full not in by or lora not in by:
            continue
        f, lo = by[full], by[lora]
        ratios = {k: f[k] / lo[k] for k in FIGURES if f.get(k) and lo.get(k)}
        values = (
            f["update_values"] / lo["update_values"] if f.get("update_values") and lo.get("update_values") else None
        )
        out.append({"full": full, "lora": lora, "update_values_ratio": values, "ratios": ratios})
    return out


def why(pairs: list[dict[str, Any]], rows: list[dict[str, Any]]) -> str:
    """The measured ratios in words, each beside the ratio of the values the two updates carry, and what share of
    the LoRA client's round its protection took (the rest is training and evaluation through the whole model)."""
    if not pairs:
        return "full fine-tuning or its LoRA twin did not complete: no ratio measured"
    p, by = pairs[0], {r["config"]: r for r in rows}
    r, lora = p["ratios"], by[p["lora"]]
    if not p["update_values_ratio"]:
        return "the configurations' records do not say how many values an update carries: no ratio explained"
    parts = [f"a full update carries {p['update_values_ratio']:.0f}x the values of the LoRA one"]
    if "upload_bytes_per_client_round" in r:
        per_value = r["upload_bytes_per_client_round"] / p["update_values_ratio"]
        parts.append(f"bytes {r['upload_bytes_per_client_round']:.0f}x ({per_value:.2f}x the bytes per value)")
    if "client_protection_cpu_s_per_round" in r:
        parts.append(
            f"the client's protection CPU (encrypt, decrypt, send) {r['client_protection_cpu_s_per_round']:.0f}x"
        )
    if "aggregator_cpu_s_per_client_round" in r:
        parts.append(f"the aggregator's CPU per client {r['aggregator_cpu_s_per_client_round']:.0f}x")
    if "client_cpu_s_per_round" in r:
        parts.append(f"the client's whole round {r['client_cpu_s_per_round']:.1f}x")
    if lora.get("client_protection_cpu_s_per_round") and lora.get("client_cpu_s_per_round"):
        share = lora["client_protection_cpu_s_per_round"] / lora["client_cpu_s_per_round"]
        parts.append(
            f"the protection is {100 * share:.0f} % of a LoRA client's round CPU; the rest is the forward and backward "
            "passes through the whole (frozen) model, which LoRA does not shrink"
        )
    parts.append("the field's ~100x to ~750x compare communication or encryption time alone, not whole rounds")
    return "; ".join(parts)


def _suite(clients: int, rounds: int, labels: tuple[str, ...] | None = None) -> Suite:
    path = shipped_suite("language-gpt2").path
    suite = load_suite(path, [f"data.clients={clients}", f"training.rounds={rounds}"])
    if labels is None:
        return suite
    known = [c.label for c in suite.configurations]
    unknown = [label for label in labels if label not in known]
    if unknown:
        raise ParameterError(
            f"--language-configurations: no configuration {', '.join(unknown)}", f"choose among {', '.join(known)}"
        )
    raw = suite.model_dump(mode="json")
    raw["configurations"] = [c for c, label in zip(raw["configurations"], known, strict=True) if label in labels]
    return Suite.model_validate(raw)


def labels(text: str) -> tuple[str, ...]:
    """Configuration labels, comma-separated."""
    chosen = tuple(part.strip() for part in text.split(",") if part.strip())
    if not chosen:
        raise ParameterError(f"'{text}' names no configuration", "write e.g. lora/compact-bfv-16,full/compact-bfv-16")
    return chosen


def only(suite: Suite, index: int, clients: int | None = None) -> Suite:
    """``suite`` with its ``index``-th configuration alone (same label), so each configuration runs on its own, with
    ``clients`` clients when given; no text attacks after it (this study measures costs)."""
    raw = suite.model_dump(mode="json")
    raw["configurations"] = [raw["configurations"][index]]
    if clients is not None:
        raw["data"]["clients"] = clients
    raw["text_leakage"] = {"enabled": False}
    single = Suite.model_validate(raw)
    assert single.configurations[0].label == suite.configurations[index].label
    return single


def measure(suite: Suite, clients: dict[str, int] | None = None) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Run each configuration of ``suite`` on its own (one failing, full fine-tuning out of memory say, leaves the
    others measured), with ``clients[kind]`` clients for fine-tuning kind ``kind`` when given (the suite's count
    otherwise); its rows, and the error of each configuration that failed."""
    records: list[dict[str, Any]] = []
    errors: dict[str, str] = {}
    for index, config in enumerate(suite.configurations):
        kind = suite.model_for(config).fine_tuning.kind
        with tempfile.TemporaryDirectory() as tmp:
            try:
                Runner(only(suite, index, (clients or {}).get(kind)), Path(tmp)).run()
            except Exception as err:  # recorded as the configuration's failure, never hidden
                errors[config.label] = f"{type(err).__name__}: {err}"
            path = Path(tmp) / "results.jsonl"
            if path.exists():
                records += [r.to_json() for r in read_records(path).records]
    rows = [configuration_row(c.label, records) for c in suite.configurations]
    for row in rows:
        if row["config"] in errors and not row["failure"]:
            row["failure"] = errors[row["config"]]
    memory_goals(rows)
    return rows, errors


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The memory goal and the full ÷ LoRA ratios of measured rows."""
    pairs = full_over_lora(rows)
    lora = [r for r in rows if r["fine_tuning"] == "lora"]
    return {
        "memory_goal": {"every_lora_party_vs_raw_client": CLIENT_RATIO},
        "lora_within_memory_goal": bool(lora) and all(r.get("within_goal") for r in lora),
        "configurations": rows,
        "full_over_lora": pairs,
        "why": why(pairs, rows),
    }


@study(
    "language",
    default=False,
    options=(
        Option(
            "--language-clients",
            "clients",
            "clients of the GPT-2-small run (default 8; fewer if memory is short)",
            count,
        ),
        Option("--language-rounds", "rounds", "rounds of the GPT-2-small run (default 2, at least 2)", count),
        Option(
            "--language-configurations",
            "configurations",
            "the suite's configurations to run, comma-separated labels (default: all)",
            labels,
        ),
    ),
)
def language(clients: int = 8, rounds: int = 2, configurations: tuple[str, ...] | None = None) -> dict[str, Any]:
    """GPT-2 small, LoRA vs full fine-tuning under HE: bytes and CPU per round, peak memory, full ÷ LoRA ratios."""
    if rounds < 2:
        raise ParameterError(
            f"--language-rounds {rounds}: round 0 is a warm-up, so no steady round would be measured", "give 2 or more"
        )
    available = psutil.virtual_memory().available / GB
    suite = _suite(clients, rounds, configurations)
    kinds = {suite.model_for(c).fine_tuning.kind for c in suite.configurations}
    # each configuration runs alone, so each fine-tuning kind gets the most clients its own peak leaves room for
    ran = {kind: clients_that_fit(clients, available, needs_full=kind == "full") for kind in sorted(kinds)}
    header: dict[str, Any] = {
        "benchmark": "language",
        "suite": "language-gpt2",
        "clients_asked": clients,
        "clients": ran,
        "rounds": rounds,
        "configurations_asked": list(configurations) if configurations else "all",
        "available_memory_gb": round(available, 1),
        "memory_needed_gb": {kind: round(FIXED_GB + clients * CLIENT_GB[kind], 1) for kind in ran},
        "note": "GPT-2 small's configuration, randomly initialised (no weights can be downloaded here): cost, not "
        "quality",
    }
    if min(ran.values()) < 2:
        short = ", ".join(kind for kind, n in ran.items() if n < 2)
        return {**header, "skipped": f"{available:.1f} GB available: not even 2 clients of {short} fine-tuning fit"}
    fewer = {kind: n for kind, n in ran.items() if n < clients}
    if fewer:
        header["fewer_clients"] = "; ".join(
            f"{clients} clients of {kind} fine-tuning need about {header['memory_needed_gb'][kind]} GB at its peak, "
            f"{available:.1f} GB were available, so the largest count that fits ({n} clients) ran"
            for kind, n in fewer.items()
        )
    load = psutil.getloadavg()
    began = time.time()
    rows, errors = measure(suite, ran)
    return {
        **header,
        "load_avg_at_start": list(load),
        "load_avg_at_end": list(psutil.getloadavg()),
        "run_wall_s": time.time() - began,
        "failed": errors,
        **summarise(rows),
    }
