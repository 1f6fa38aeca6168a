"""Assemble and write one self-contained HTML report (figures inlined; PNG, SVG and CSV beside it)."""

from __future__ import annotations

import base64
import csv
import datetime as dt
import itertools
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup, escape

from hebench import __version__
from hebench.analysis.advice import advise, defence_lines, library_advice, offload_lines, privacy_advice
from hebench.analysis.choose import choose, recovered_text
from hebench.analysis.defended import attack_name
from hebench.analysis.dropouts import dropout_notes
from hebench.analysis.load_flags import load_notes
from hebench.analysis.model_fit import fit
from hebench.analysis.model_origin import origin_notes
from hebench.analysis.options import DEFAULT_THREAT, Option, options_for
from hebench.analysis.pareto import Interval
from hebench.analysis.score_notes import MARK, vifp_above_one, vifp_note
from hebench.analysis.suite_diff import suite_differences
from hebench.analysis.summary import SummaryRow
from hebench.analysis.text_leakage import text_verdicts
from hebench.analysis.text_threats import text_threats
from hebench.analysis.threats import threat_words
from hebench.measure.environment import comparable
from hebench.report import figures as F
from hebench.report.dropouts_figure import dropouts_section
from hebench.report.leakage_chart import chart_caption, chart_size, cost_leakage
from hebench.report.load import Source, load_source, stored_labels
from hebench.report.network_figure import links_section
from hebench.report.threat_charts import threat_section
from hebench.results import units as U
from hebench.results.records import (
    ModelledCostRecord,
    PartyRoundRecord,
    RoundRecord,
    RunFailedRecord,
    TextAttackSummaryRecord,
)

# (row field, CSV header with its unit, HTML header, cell formatter): CPU is OS-accounted process CPU time, wall is
# elapsed; the CSV holds plain numbers in the header's unit, the HTML cells carry their own unit (ms, kB, MB)
COST_COLUMNS: list[tuple[str, str, str, Callable[[Any], str]]] = [
    ("config", "configuration", "configuration", str),
    ("accuracy", "accuracy", "accuracy", U.fmt_number),
    # language models: held-out perplexity after the first and the last round, and the values one update carries
    ("first_perplexity", "perplexity round 1", "perplexity (round 1)", lambda v: f"{v:.4g}"),
    ("perplexity", "perplexity", "perplexity (last round)", lambda v: f"{v:.4g}"),
    ("update_parameters", "update values", "update values", lambda v: f"{v:,}"),
    ("dp_epsilon", "DP epsilon", "DP ε (at its δ)", lambda v: f"{v:.3g}"),
    ("client_cpu_s_per_round", "client CPU s/round", "host CPU per round", U.fmt_seconds),
    ("engine_cpu_s_per_round", "engine CPU s/round", "engine CPU per round", U.fmt_seconds),
    ("total_cpu_s_per_round", "total CPU s/round", "total CPU (host + engine)", U.fmt_seconds),
    ("upload_bytes_per_client_round", "upload B/round", "upload per round", U.fmt_bytes),
    ("bytes_overhead_vs_raw", "upload ×raw", "", U.fmt_ratio),
    ("cpu_overhead_vs_raw", "client CPU ×raw", "", U.fmt_ratio),
    ("total_cpu_overhead_vs_raw", "total CPU ×raw", "", U.fmt_ratio),
    ("round_wall_s", "round wall s", "round wall", U.fmt_seconds),
    ("flower_round_wall_s", "Flower round wall s", "Flower round wall", U.fmt_seconds),
    ("peak_rss_bytes", "peak RSS B", "peak RSS", U.fmt_bytes),
    ("max_abs_error", "max error", "max error", lambda v: U.MISSING if v is None else f"{v:.2g}"),
    ("steady_rounds", "steady rounds", "steady rounds", U.fmt_number),
    ("warmup_rounds", "warm-up rounds", "", U.fmt_number),
    ("selected_clients", "clients selected", "", U.fmt_number),  # steady rounds' client-rounds
    ("dropped_clients", "clients dropped", "", U.fmt_number),  # of those, counted apart from the costs
]
# the overhead table: ratios to raw and the spread over steady rounds behind them
OVERHEAD_HEADER = [
    "configuration",
    "client CPU ×raw",
    "client CPU s min",
    "client CPU s max",
    "total CPU ×raw",
    "upload ×raw",
    "upload B min",
    "upload B max",
    "round wall ×raw",
    "round wall s min",
    "round wall s max",
]


def _fmt(value: Any) -> str:
    return U.fmt_number(value) if isinstance(value, (int, float)) or value is None else str(value)


def write_csv(path: Path, header: list[str], rows: list[list[Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def _table(files: Path, name: str, header: list[str], values: list[list[Any]], cells: list[list[str]]) -> dict:
    """A report table: ``cells`` shown, ``values`` (plain numbers, units in ``header``) written as CSV."""
    return {"header": header, "rows": cells, "csv": write_csv(files / f"{name}.csv", header, values).name}


def _times(r: float | None) -> str:
    """``4.51×``: a ratio under a ×raw header."""
    return U.MISSING if r is None else f"{r:.3g}×"


def _overhead_table(rows: list[SummaryRow], files: Path, prefix: str) -> dict:
    engines = any(r.uses_engines for r in rows)
    values, cells = [], []
    for r in rows:
        cpu, up, wall = r.client_cpu_s_spread, r.upload_bytes_spread, r.round_wall_s_spread
        values.append(
            [
                r.config,
                r.cpu_overhead_vs_raw,
                *(cpu or (None, None)),
                r.total_cpu_overhead_vs_raw,
                r.bytes_overhead_vs_raw,
                *(up or (None, None)),
                r.round_time_vs_raw,
                *(wall or (None, None)),
            ]
        )
        cells.append(
            [
                r.config,
                _times(r.cpu_overhead_vs_raw),
                U.fmt_spread(cpu, "s"),
                *([_times(r.total_cpu_overhead_vs_raw)] if engines else []),
                _times(r.bytes_overhead_vs_raw),
                U.fmt_spread(up, "B"),
                _times(r.round_time_vs_raw),
                U.fmt_spread(wall, "s"),
            ]
        )
    header = [
        "configuration",
        "host CPU ×raw",
        "host CPU range",
        *(["total CPU ×raw (host + engine)"] if engines else []),
        "upload ×raw",
        "upload range",
        "round wall ×raw",
        "round wall range",
    ]
    table = _table(files, f"{prefix}-overhead", OVERHEAD_HEADER, values, cells)
    return _without_empty_columns({**table, "header": header})


def _without_empty_columns(table: dict) -> dict:
    """The table without the columns where every row is missing (a Flower column in a local run)."""
    keep = [i for i in range(len(table["header"])) if i == 0 or any(row[i] != U.MISSING for row in table["rows"])]
    return {
        **table,
        "header": [table["header"][i] for i in keep],
        "rows": [[row[i] for i in keep] for row in table["rows"]],
    }


def _costs_table(rows: list[SummaryRow], files: Path, prefix: str) -> dict:
    """Costs per configuration: the CSV with every column in plain numbers, the HTML with the shown ones."""
    shown = [(k, h, f) for k, _, h, f in COST_COLUMNS if h]

    def cell(r: SummaryRow, key: str, fmt: Callable[[Any], str]) -> str:
        if key == "steady_rounds" and r.includes_warmup:  # as the note says: no steady round, the warm-up averaged
            return f"0 ({r.steady_rounds} with the warm-up)"
        return fmt(getattr(r, key)) if getattr(r, key) is not None else U.MISSING

    table = _table(
        files,
        f"{prefix}-costs",
        [h for _, h, _, _ in COST_COLUMNS],
        [[getattr(r, k) for k, _, _, _ in COST_COLUMNS] for r in rows],
        [[cell(r, k, f) for k, _, f in shown] for r in rows],
    )
    return _without_empty_columns({**table, "header": [h for _, h, _ in shown]})


def _steady_note(rows: list[SummaryRow]) -> str:
    """What the headline figures average over: steady rounds, or (said plainly) warm-up included."""
    cold = [r.config for r in rows if r.includes_warmup]
    warm = {r.warmup_rounds for r in rows if not r.includes_warmup}
    parts = []
    if warm:
        n = max(warm)
        parts.append(
            f"Per-round figures and ×raw ratios are means over steady rounds: the first {n} round(s) after the "
            "parties start (warm-up) are measured and recorded but left out. Ranges are min–max over steady "
            "rounds (and clients)."
            if n
            else "Per-round figures are means over every round (measure.warmup_rounds: 0)."
        )
    if cold:
        parts.append(
            f"{', '.join(cold)}: no steady round completed, so these figures include the first (warm-up) round "
            "and overstate steady-state costs; run at least 2 rounds."
        )
    return " ".join(parts)


def contended(source: Source) -> bool:
    """The run's wall times include waiting for a core (its load flags)."""
    return bool(load_notes(source.run, source.rows))


def run_options(
    source: Source,
    attacks: list[Any] | None = None,
    run: str = "",
    threat: str = DEFAULT_THREAT,
    text: list[TextAttackSummaryRecord] | None = None,
) -> list[Option]:
    """The source's configurations as chart/advice options: its own attacks, or ``attacks`` when given, under one
    threat model (default: the honest-but-curious aggregator); a language model's from its text attacks (its own,
    or ``text``)."""
    chosen = source.attacks if attacks is None else attacks
    verdicts = text_verdicts(source.text_attacks if text is None else text)
    modelled = {m.config: m for m in source.of(ModelledCostRecord)}
    return options_for(source.rows, chosen, run, modelled, contended(source), threat, verdicts)


def run_section(
    source: Source,
    figs: F.FigureSet,
    files: Path,
    idx: int,
    attacks: list[Any] | None = None,
    text: list[TextAttackSummaryRecord] | None = None,
) -> dict[str, Any]:
    """One run's tables and figures; ``attacks`` and ``text`` (default: the source's own) score its
    configurations."""
    rows = list(source.rows)
    rounds = source.of(RoundRecord)
    failure = source.failure
    section: dict[str, Any] = {
        "label": source.label,
        "suite_name": source.suite_name,
        "rows": rows,
        "figures": [],
        "quality": [],
        "notes": list(source.notes),
        "remarks": [],  # shown with the run's costs
        "failure": failure_text(failure) if failure else None,
        "load": load_notes(source.run, rows),
        "advice": [],
        "choose": [],
        "chart": None,
        "chart_caption": "",
        "cycles": any(p.cycles_source for p in source.of(PartyRoundRecord)),
        "offload_lines": [],
        "threat_matrix": None,  # hebench.analysis.threats
        "threats": [],
        "threat_lines": [],
    }
    if not rows:
        return section
    if any(r.runtime == "flower" for r in rows):
        section["label"] += " (on Flower)"
        section["remarks"].append(
            "Run on Flower's deployment engine: CPU and bytes are measured as in local runs; 'Flower round wall s' "
            "includes Flower's polling and a ClientApp process per message, so it is not comparable with "
            "local round times."
        )
    for m in source.of(ModelledCostRecord):
        section["remarks"].append(
            f"{m.config}: the tables show its run as measured; under a TEE its costs are modelled, not measured "
            f"({m.model}: round wall ×{m.modelled_round_wall_s / max(m.baseline_round_wall_s, 1e-12):.3f}, "
            f"CPU ×{m.modelled_cpu_s / max(m.baseline_cpu_s, 1e-12):.3f}; source: {m.source}); the chart draws it "
            "hollow, at the modelled costs."
        )
    section["remarks"] += [*origin_notes(rows), *dropout_notes(rows)]
    prefix = f"run{idx}"
    section["steady"] = _steady_note(rows)
    cold = all(r.includes_warmup for r in rows)  # said as the note above the table says it
    section["ranges_over"] = (
        "rounds (the first, warm-up round included: no steady round yet)" if cold else "steady rounds"
    )
    section["per_round"] = "round (the warm-up round included)" if cold else "steady round"
    section["table"] = _costs_table(rows, files, prefix)
    section["overhead"] = _overhead_table(rows, files, prefix)
    options = run_options(source, attacks, text=text)
    verdicts = text_verdicts(source.text_attacks if text is None else text)
    section["choose"] = choose(options)
    section["advice"] = advise(rows, contended(source)) + defence_lines(source.attacks if attacks is None else attacks)
    section["chart"] = figs.add(f"{prefix}-cost-leakage", cost_leakage(options), size=chart_size(options))
    section["chart_caption"] = chart_caption(options)
    section.update(
        threat_section(
            rows,
            source.attacks if attacks is None else attacks,
            lambda threat: run_options(source, attacks, threat=threat, text=text),
            lambda name, draw, size: figs.add(name, draw, size=size),
            lambda name, header, values, cells: _table(files, name, header, values, cells),
            prefix,
            text_threats(rows, verdicts),
        )
    )
    section["spread"] = [{"config": r.config, "cpu": r.client_cpu_s_spread} for r in rows]
    cost_panels = [
        ("client_cpu_s_per_round", "host CPU (s)", 1.0),
        ("engine_cpu_s_per_round", "engine CPU (s)", 1.0),
        *([("total_cpu_s_per_round", "total CPU (s)", 1.0)] if any(r.uses_engines for r in rows) else []),
        ("upload_bytes_per_client_round", "upload (MB)", 1e-6),
        ("peak_rss_bytes", "peak RSS (MB)", 1e-6),
    ]
    if any(r.round_wall_s for r in rows):  # a run that failed before its first round has no phases to draw
        section["figures"].append(
            (
                "Wall time per phase per round (client, or engine under offload; and aggregation)",
                figs.add(f"{prefix}-phases", F.phase_bars(rows)),
            )
        )
    if any(getattr(r, key) for r in rows for key, _, _ in cost_panels):
        section["figures"].append(
            (
                "CPU time (host, engine and their total under offload), upload and peak memory per client per round",
                figs.add(f"{prefix}-costs", F.paired_bars(rows, cost_panels), size=(9, 3.4)),
            )
        )
    if rounds:
        quality = section["quality"]

        def caption(text: str, key: str, log: bool = False) -> str:
            note = F.coincide_note(F.coinciding(rounds, key, log))
            return f"{text} ({note})" if note else text

        if any(r.perplexity is not None for r in rounds):  # a language model: perplexity is its quality
            quality.append(
                (
                    caption("Held-out perplexity per round", "perplexity"),
                    figs.add(f"{prefix}-perplexity", F.curves(rounds, "perplexity", "perplexity")),
                )
            )
        else:
            quality.append(
                (
                    caption("Test accuracy per round", "accuracy"),
                    figs.add(f"{prefix}-accuracy", F.curves(rounds, "accuracy", "accuracy")),
                )
            )
        loss_text = "Held-out next-token loss" if any(r.perplexity is not None for r in rounds) else "Test loss"
        quality.append(
            (
                caption(f"{loss_text} per round", "loss"),
                figs.add(f"{prefix}-loss", F.curves(rounds, "loss", "test loss")),
            )
        )
        if any(r.max_abs_error for r in rounds):
            curve = F.curves(rounds, "max_abs_error", "max |error|", log=True)
            quality.append(
                (
                    caption("Max decryption error against plaintext FedAvg, per round", "max_abs_error", log=True),
                    figs.add(f"{prefix}-error", curve),
                )
            )
    fitted = [r for r in rows if r.selective_known]  # unknown selective settings: no honest feature vector
    section["models"] = [
        m
        for m in (
            fit(fitted, key) for key in ("client_cpu_s_per_round", "upload_bytes_per_client_round", "round_wall_s")
        )
        if m
    ]
    section["model_csv"] = {
        m.metric: write_csv(
            files / f"{prefix}-model-{m.metric}.csv",
            ["mechanism or configuration", "coefficient ×raw", "measured ×raw", "predicted ×raw"],
            [[k, v, None, None] for k, v in (m.coefficients or {}).items()]
            + [[c, None, meas, pred] for c, (meas, pred) in m.predicted.items()],
        ).name
        for m in section["models"]
    }
    section["offload"] = [r for r in rows if r.uses_engines]
    section["offload_lines"] = offload_lines(rows, contended(source))
    return section


def failure_text(rec: RunFailedRecord) -> str:
    """One line for a failed run: where, what, and the fix."""
    where = f"configuration '{rec.config}'" if rec.config else "set-up"
    if rec.config and rec.round is not None:
        where += f", round {rec.round + 1}"
    return f"This run failed in {where}: {rec.error}: {rec.problem}" + (f" (fix: {rec.fix})" if rec.fix else "")


def configuration_status(source: Source) -> list[dict[str, str]]:
    """Every configuration of the run's suite with what became of it: done, failed, incomplete or not run."""
    rows = {r.config: r for r in source.rows}
    wanted = int((source.run.suite.get("training") or {}).get("rounds") or 0) if source.run else 0
    failure = source.failure
    out = []
    for label in stored_labels(source) or list(rows):
        row = rows.get(label)
        done = row.rounds_done if row else 0
        if failure and failure.config == label:
            status = f"failed after {done} of {wanted} rounds"
        elif row is None:
            status = "not run (the run stopped before it)" if failure else "not run"
        elif wanted and done < wanted:
            status = f"{done} of {wanted} rounds"
        else:
            status = f"done ({done} rounds)"
        out.append({"label": label, "status": status})
    return out


def suite_warnings(sources: list[Source]) -> list[str]:
    """A note for each run whose suite differs from the first run's, naming the fields that differ."""
    runs = [s for s in sources if s.run is not None]
    out = []
    for other in runs[1:]:
        first = runs[0]
        if other.run.suite_hash == first.run.suite_hash:  # type: ignore[union-attr]
            continue
        fields = suite_differences(first.run.suite, other.run.suite)  # type: ignore[union-attr]
        out.append(
            f"{first.label} and {other.label} ran different suites (sha256 {first.run.suite_hash[:12]}… vs "  # type: ignore[union-attr]
            f"{other.run.suite_hash[:12]}…): {', '.join(fields[:8]) or 'fields'}"  # type: ignore[union-attr]
            + (f" and {len(fields) - 8} more" if len(fields) > 8 else "")
            + " differ; compare their figures with care"
        )
    return out


def combined_section(sources: list[Source], figs: F.FigureSet) -> dict[str, Any] | None:
    """Several runs on one chart and one Pareto set: each run's ratios to its own raw row, named by run."""
    runs = [s for s in sources if s.rows]
    if len(runs) < 2:
        return None
    labels = [s.label for s in runs]
    names = [s.path.name if labels.count(s.label) > 1 else s.label for s in runs]
    options = [o for s, name in zip(runs, names, strict=True) for o in run_options(s, run=name)]
    return {
        "runs": names,
        "choose": choose(options),
        "chart": figs.add("combined-cost-leakage", cost_leakage(options), size=chart_size(options)),
        "chart_caption": chart_caption(options, combined=True),
    }


def library_section(libraries: list[dict[str, Any]], figs: F.FigureSet, files: Path) -> dict[str, Any] | None:
    if not libraries:
        return None
    header = [
        "adapter",
        "values",
        "encrypt µs",
        "decrypt µs",
        "add µs",
        "×plain µs",
        "B/value",
        "×float32",
        "security bits",
        "slots",
        "precision",
        "max error",
        "public keys B",
        "secret keys B",
        "peak RSS MB",
    ]
    rows = []
    for r in libraries:
        ops, b, info = r["operations"], r["bytes"], r["info"]
        rows.append(
            [
                r["adapter"],
                r["size"],
                *(ops[k]["wall_s_per_value"] * 1e6 for k in ("encrypt", "decrypt", "add", "multiply_plain")),
                b["fresh_per_value"],
                b["expansion_over_float32"],
                info["security_bits"],
                info["slots"],
                info["precision"],
                r["error"]["max_abs"],
                b["public_keys"],
                b["secret_keys"],
                r["peak_rss_bytes"] / 2**20,
            ]
        )
    sizes = sorted({r["size"] for r in libraries})
    cells = [[_fmt(v) for v in row] for row in rows]
    costs, keys = (0, 1, 2, 3, 4, 5, 6, 7, 14), (0, 1, 8, 9, 10, 11, 12, 13)  # two tables: each fits 800 px
    return {
        "tables": [
            {"header": [header[i] for i in cols], "rows": [[row[i] for i in cols] for row in cells]}
            for cols in (costs, keys)
        ],
        "csv": write_csv(files / "libraries.csv", header, rows).name,
        "figures": [
            (f"Per-operation cost at {s:,} values (log scale)", figs.add(f"libraries-{s}", F.library_ops(libraries, s)))
            for s in sizes
        ],
        "extrapolated": any(r["extrapolated"] for r in libraries),
    }


SCORES = (("ssim", "SSIM", ".2f"), ("psnr", "PSNR dB", ".1f"), ("uqi", "UQI", ".2f"), ("vifp", "VIFp", ".2f"))


def score_cell(scores: dict[str, Any], metric: str, spec: str = ".2f") -> str:
    """``0.42 ± 0.59`` over the attack's images and seeds; one image shows no spread; never ``-0.00``."""
    return U.fmt_score(scores.get(metric), int(scores.get("n", 0) or 0), spec)


def privacy_caption(attacks: list[Any]) -> str:
    """Says which attack ran, against which masks, from p = 0 to p = 1."""
    names = sorted({attack_name(a) for a in attacks})
    masks = sorted({a.mask for a in attacks if a.mask})
    return (
        f"Leakage: {' / '.join(names)} reconstruction SSIM (mean; bars ± std over images and seeds, bounded by the "
        f"lowest and highest SSIM seen) against the fraction of parameters encrypted p, for the "
        f"{' and '.join(masks)} mask{'s' if len(masks) > 1 else ''} that ran, with p = 0 (raw: nothing "
        "encrypted) and p = 1 (full HE) where the same attack ran on those views; beside each point, the images it "
        "recovered (SSIM ≥ 0.6) out of those attacked. Right: upload per client per "
        "round at each measured p. Points are measured; nothing between them was, so no line joins them."
    )


def privacy_section(sources: list[Source], figs: F.FigureSet, files: Path) -> dict[str, Any] | None:
    attacks = [a for s in sources for a in s.attacks]
    if not attacks:
        return None
    several = {a.threat_key for a in attacks} - {DEFAULT_THREAT}  # other adversaries than the aggregator attacked
    header = ["plan", "attack", "encrypted p", "recovered (95 % Wilson)", "SSIM", "PSNR dB", "UQI", "VIFp", "label acc"]
    if several:
        header.insert(2, "adversary")
    csv_header = [
        "plan",
        "attack",
        "encrypted p",
        "images",
        "recovered k",
        "recovered n",
        "recovered low",
        "recovered high",
        "success SSIM",
    ]
    for _, name, _ in (*SCORES, ("label_accuracy", "label acc", "")):
        csv_header += [f"{name} mean", f"{name} std"]
    csv_header.append("threat model")
    rows, values = [], []
    for a in attacks:
        sc = a.scores
        ok = sc.get("success") or {}
        rec = Interval.rate(int(ok["k"]), int(ok["n"])) if ok.get("n") else None
        rows.append(
            [
                a.plan,
                attack_name(a),
                *([threat_words(a.threat_key)] if several else []),
                f"{a.ratio:g}",
                recovered_text(rec).replace(" recovered", "") if rec else U.MISSING,
                *(
                    score_cell(sc, key, spec) + (MARK if key == "vifp" and vifp_above_one(a) else "")
                    for key, _, spec in SCORES
                ),
                score_cell(sc, "label_accuracy", ".1f"),
            ]
        )
        values.append(
            [
                a.plan,
                a.attack,
                a.ratio,
                sc.get("n"),
                ok.get("k"),
                ok.get("n"),
                ok.get("low"),
                ok.get("high"),
                ok.get("threshold"),
            ]
            + [
                v
                for key, _, _ in (*SCORES, ("label_accuracy", "", ""))
                for v in ((sc[key]["mean"], sc[key]["std"]) if key in sc else (None, None))
            ]
            + [a.threat_key]
        )
    grids = []
    for a in attacks:
        if a.grid and Path(a.grid).exists():
            data = base64.b64encode(Path(a.grid).read_bytes()).decode()
            grids.append(
                {"plan": a.plan, "png": data, "ssim": score_cell(a.scores, "ssim") if "ssim" in a.scores else None}
            )
    frontier = [a for a in attacks if a.mask and "ssim" in a.scores and not a.dry_run]
    costs: dict[float, float] = {}
    for s in sources:
        for r in s.rows:
            sel, upload = r.selective, r.upload_bytes_per_client_round
            if r.is_baseline and upload is not None:
                costs[0.0] = upload
            elif sel and sel.get("mask") == "sensitivity" and upload:
                costs[float(sel["ratio"])] = upload
            elif not sel and r.selective_known and r.clients_hold_keys and upload:
                costs.setdefault(1.0, upload)
    fig = figs.add("privacy-frontier", F.frontier(attacks, costs or None), size=(9, 3.8)) if frontier else None
    return {
        "header": header,
        "rows": rows,
        "csv": write_csv(files / "attacks.csv", csv_header, values).name,
        "grids": grids,
        "frontier": fig,
        "caption": privacy_caption(frontier) if frontier else "",
        "advice": privacy_advice(attacks),
        "notes": vifp_note(attacks),
        "heading": "what each adversary reconstructs" if several else "what the aggregator reconstructs",
    }


TEXT_HEADER = [
    "run",
    "configuration",
    "adversary",
    "view",
    "batch size",
    "attack",
    "outcome",
    "reason",
    "exact k",
    "sequences n",
    "exact rate",
    "exact low",
    "exact high",
    "ROUGE-1",
    "ROUGE-2",
    "ROUGE-L",
    "token precision",
    "token recall",
]


def text_leakage_section(sources: list[Source], files: Path) -> dict[str, Any] | None:
    """What each view of each language-model configuration gave the text attack: outcome and typed reason, exact
    sequences (Wilson 95 %), ROUGE-1/2/L, token precision/recall, and recovered text beside the original (the
    template escapes it); verdicts from :mod:`hebench.analysis.text_leakage`, as the terminal prints them."""
    by_source = [(s.label, text_verdicts(s.text_attacks)) for s in sources if s.text_attacks]
    if not by_source:
        return None
    several = len(by_source) > 1

    def score(v: float | None) -> str:
        return U.MISSING if v is None else f"{v:.2f}"

    rows, values, examples = [], [], []
    for label, verdicts in by_source:
        for v in verdicts:
            rows.append(
                {
                    "cells": [
                        *([label] if several else []),
                        v.config,
                        f"{v.adversary}: {v.view}",
                        str(v.batch_size),
                        v.outcome_words,
                        v.exact_words,
                        score(v.rouge1),
                        score(v.rouge2),
                        score(v.rougeL),
                        score(v.token_precision),
                        score(v.token_recall),
                    ],
                    "outcome": v.outcome,
                    "why": v.why,
                }
            )
            e = v.exact
            values.append(
                [
                    *(label, v.config, v.adversary, v.view, v.batch_size, v.attack, v.outcome, v.reason, e.k, e.n),
                    *(e.value if e.n else None, e.lo, e.hi, v.rouge1, v.rouge2, v.rougeL, v.token_precision),
                    v.token_recall,
                ]
            )
            shown = [x for x in v.examples if x.get("original") is not None]
            if shown:
                examples.append(
                    {
                        "title": f"{label + ': ' if several else ''}{v.config} · {v.adversary}: {v.view} · "
                        f"batch {v.batch_size}",
                        "outcome": v.outcome_words,
                        "pairs": [
                            {
                                "original": x.get("original"),
                                "recovered": x.get("recovered"),
                                "mark": "exact" if x.get("exact") else f"ROUGE-1 {float(x.get('rouge1') or 0.0):.2f}",
                            }
                            for x in shown
                        ],
                    }
                )
    header = [
        *(["run"] if several else []),
        "configuration",
        "view",
        "batch",
        "outcome",
        "exact sequences (95 % Wilson)",
        "ROUGE-1",
        "ROUGE-2",
        "ROUGE-L",
        "token precision",
        "token recall",
    ]
    attacks = sorted({v.attack for _, vs in by_source for v in vs})
    return {
        "header": header,
        "rows": rows,
        "csv": write_csv(files / "text-attacks.csv", TEXT_HEADER, values).name,
        "examples": examples,
        "attack": " / ".join("exact span" if a == "span" else a for a in attacks),
    }


def _env_cell(key: str, value: Any) -> str:
    if key == "threads":
        pinned = {k: v for k, v in (value or {}).items() if v}
        return ", ".join(f"{k}={v}" for k, v in pinned.items()) or "not pinned"
    if key == "cycles":
        return (value or {}).get("source") or f"not recorded: {(value or {}).get('reason', 'unknown')}"
    if key == "libraries":
        return ", ".join(f"{k} {v}" for k, v in (value or {}).items() if v)
    if key == "affinity":
        return ", ".join(map(str, value or [])) or "–"
    return _fmt(value)


def environments(sources: list[Source]) -> dict[str, Any]:
    envs = [(s.label, s.environment) for s in sources if s.environment]
    keys = (
        "hebench",
        "python",
        "cpu_model",
        "cpu_flags",
        "logical_cores",
        "affinity",
        "threads",
        "cycles",
        "libraries",
    )
    table = [
        [k, *(_env_cell(k, e.get(k)) if k != "cpu_flags" else " ".join(e.get(k) or []) for _, e in envs)] for k in keys
    ]
    warnings = []
    for (la, a), (lb, b) in itertools.pairwise(envs):
        diffs = comparable(a, b)
        if diffs:
            warnings.append(f"{la} and {lb} differ in {', '.join(diffs)}: compare their figures with care")
    return {"labels": [label for label, _ in envs], "rows": table, "warnings": warnings}


def _labelled_sources(sources: list[Source]) -> list[Source]:
    """The sources, each with a label of its own (two folders of one name get their parent's name too)."""
    names = [s.label for s in sources]
    return [replace(s, display=f"{s.path.parent.name}/{s.label}") if names.count(s.label) > 1 else s for s in sources]


def breakable(label: Any) -> Markup:
    """A configuration label that may wrap after each ``/`` (never inside a word), HTML-escaped."""
    return Markup(str(escape(str(label))).replace("/", "/<wbr>"))


def build_report(paths: list[Path], output: Path) -> Path:
    """Write ``output`` (HTML) and ``<stem>_files/`` (figures as PNG/SVG, tables as CSV)."""
    sources = _labelled_sources([load_source(Path(p)) for p in paths])
    files = output.parent / f"{output.stem}_files"
    figs = F.FigureSet(files)
    with_runs = [s for s in sources if s.rows or s.run]
    loose = [a for s in sources if not (s.rows or s.run) for a in s.attacks]  # attack files given on their own
    shared = [*with_runs[0].attacks, *loose] if len(with_runs) == 1 and loose else None
    loose_text = [a for s in sources if not (s.rows or s.run) for a in s.text_attacks]  # a text-attacks.jsonl
    shared_text = [*with_runs[0].text_attacks, *loose_text] if len(with_runs) == 1 and loose_text else None
    runs = [run_section(s, figs, files, i, shared, shared_text) for i, s in enumerate(with_runs)]
    threats_anchor = None
    for i, run in enumerate(runs):  # one id per matrix; the navigation links to the first
        if run["threat_matrix"]:
            run["threats_id"] = "threats" if threats_anchor is None else f"threats-{i}"
            threats_anchor = threats_anchor or run["threats_id"]
    env = environments(sources)
    env["csv"] = write_csv(files / "environment.csv", ["environment", *env["labels"]], env["rows"]).name
    libraries = [lib for s in sources for lib in s.libraries]
    context = {
        "title": "hebench report: " + ", ".join(s.label for s in sources),
        "version": __version__,
        "generated": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "sources": [
            {
                "path": str(s.path),
                "label": s.label,
                "suite_name": s.suite_name,
                "notes": s.notes,
                "run": s.run,
                "configurations": configuration_status(s),
                "failure": failure_text(s.failure) if s.failure else None,
            }
            for s in sources
        ],
        "suite_warnings": suite_warnings(sources),
        "environments": env,
        "runs": runs,
        "threats_anchor": threats_anchor,
        "combined": combined_section(sources, figs),
        "links": links_section(sources, figs, files, write_csv),
        "dropouts": dropouts_section(sources, figs, files, write_csv),
        "libraries": library_section(libraries, figs, files),
        "privacy": privacy_section(sources, figs, files),
        "text_leakage": text_leakage_section(sources, files),
        "library_advice": library_advice(libraries),
        "files_dir": files.name,
        "missing": [n for s in sources for n in s.notes],
    }
    env = Environment(loader=PackageLoader("hebench.report", "templates"), autoescape=select_autoescape(["html", "j2"]))
    env.filters["wbr"] = breakable
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(env.get_template("report.html.j2").render(**context), encoding="utf-8")
    return output
