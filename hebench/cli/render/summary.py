"""The run summary ``hebench run`` prints: narrow tables (80 columns) over steady rounds, notes, then verdicts.

Notes and verdicts are wrapped (:mod:`hebench.cli.render.lines`), whole entries kept on one line, configurations
named by their labels as in the report (the tables use the legend's short keys). Every verdict comes from
:mod:`hebench.analysis` with its evidence, as the HTML report prints it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rich import box
from rich.console import Console
from rich.table import Table

from hebench.analysis.advice import defence_lines, offload_lines, privacy_advice
from hebench.analysis.choose import choose
from hebench.analysis.dropouts import dropout_notes
from hebench.analysis.load_flags import load_notes
from hebench.analysis.model_origin import origin_notes
from hebench.analysis.options import options_for
from hebench.analysis.summary import SummaryRow
from hebench.analysis.text_leakage import text_verdicts
from hebench.analysis.text_threats import text_threats
from hebench.cli.render.legend import label_keys, print_legend
from hebench.cli.render.lines import print_lines
from hebench.cli.render.threats import print_threats
from hebench.results import units as U
from hebench.results.records import AttackSummaryRecord, RunRecord, TextAttackSummaryRecord


def _ratio(r: float | None) -> str:
    return U.MISSING if r is None else f"{r:.3g}×"


def _table(title: str, first: str, columns: Sequence[str]) -> Table:
    table = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False, title_justify="left")
    table.add_column(first, no_wrap=True)
    for col in columns:
        table.add_column(col, justify="right", no_wrap=True)
    return table


def _steady_title(rows: Sequence[SummaryRow]) -> str:
    if rows and all(r.includes_warmup for r in rows):
        return "per round (warm-up included)"
    warm = max((r.warmup_rounds for r in rows), default=0)
    return f"per steady round ({warm} warm-up round{'s' if warm != 1 else ''} left out)" if warm else "per round"


def _spread_title(rows: Sequence[SummaryRow]) -> str:
    """Over what the ranges run: steady rounds, or (said as the notes say it) rounds with the warm-up included."""
    if rows and all(r.includes_warmup for r in rows):
        return "spread: min–max over rounds (warm-up included)"
    if any(r.includes_warmup for r in rows):
        return "spread: min–max over steady rounds (warm-up included where noted)"
    return "spread: min–max over steady rounds"


def summary_tables(rows: Sequence[SummaryRow], keys: dict[str, str]) -> list[Table]:
    """Costs (CPU time, bytes, wall time, each ×raw), their spread, phases and quality, offload."""
    steady = _steady_title(rows)
    costs = _table(
        f"costs per client {steady}",
        "config",
        ("client\nCPU", "CPU\n×raw", "upload", "upload\n×raw", "round\nwall", "wall\n×raw"),
    )
    spread = _table(_spread_title(rows), "config", ("client CPU", "upload", "round wall"))
    text = any(r.perplexity is not None for r in rows)  # language models: perplexity is their quality
    phases = _table(
        "wall time per phase, and quality",
        "config",
        ("encrypt\nwall", "decrypt\nwall", "aggr.\nwall", "perplexity" if text else "accuracy", "max\nerror"),
    )
    for r in rows:
        k = keys[r.config]
        costs.add_row(
            k,
            U.fmt_seconds(r.client_cpu_s_per_round),
            _ratio(r.cpu_overhead_vs_raw),
            U.fmt_bytes(r.upload_bytes_per_client_round),
            _ratio(r.bytes_overhead_vs_raw),
            U.fmt_seconds(r.round_wall_s if r.round_wall_s is not None else r.flower_round_wall_s),
            _ratio(r.round_time_vs_raw),
        )
        spread.add_row(
            k,
            U.fmt_spread(r.client_cpu_s_spread, "s"),
            U.fmt_spread(r.upload_bytes_spread, "B"),
            U.fmt_spread(r.round_wall_s_spread, "s"),
        )
        cw = r.engine_wall_s if r.uses_engines else r.client_wall_s
        phases.add_row(
            k,
            U.fmt_seconds(cw.get("encrypt")),
            U.fmt_seconds(cw.get("decrypt")),
            U.fmt_seconds(r.aggregator_wall_s.get("aggregate")),
            _quality(r, text),
            U.MISSING if r.max_abs_error is None else f"{r.max_abs_error:.1e}",
        )
    tables = [costs, spread, phases]
    if text:
        tables.append(_language_table(rows, keys))
    offload = [r for r in rows if r.uses_engines]
    if offload:
        tables.append(_offload_table(offload, keys))
    return tables


def _quality(row: SummaryRow, text: bool) -> str:
    value = row.perplexity if text else row.accuracy
    return U.MISSING if value is None else (f"{value:.4g}" if text else f"{value:.3f}")


def _language_table(rows: Sequence[SummaryRow], keys: dict[str, str]) -> Table:
    """Language models: what each update carries, the held-out perplexity after the first and last rounds, and
    (where a configuration adds DP noise) the ε its clients had spent by the last round."""
    dp = any(r.dp_epsilon is not None for r in rows)
    table = _table(
        "held-out next-token quality (first and last round) and update size",
        "config",
        ("fine-\ntuning", "update\nvalues", "perplexity\nfirst", "perplexity\nlast", "loss\nlast")
        + (("DP ε\n(at its δ)",) if dp else ()),
    )
    for r in rows:
        ft = r.fine_tuning or {}
        epsilon = (U.MISSING if r.dp_epsilon is None else f"{r.dp_epsilon:.3g}",) if dp else ()
        table.add_row(
            keys[r.config],
            f"lora r={ft.get('rank')}" if ft.get("kind") == "lora" else str(ft.get("kind", U.MISSING)),
            f"{r.values_per_update:,}",
            U.MISSING if r.first_perplexity is None else f"{r.first_perplexity:.4g}",
            U.MISSING if r.perplexity is None else f"{r.perplexity:.4g}",
            U.MISSING if r.loss is None else f"{r.loss:.4f}",
            *epsilon,
        )
    return table


def _offload_table(rows: Sequence[SummaryRow], keys: dict[str, str]) -> Table:
    table = _table(
        "offload against its host-he twin (measured; total CPU: host + engine)",
        "config",
        ("host CPU\nsaved", "engine\nCPU", "total CPU\n×raw", "host↔engine\nbytes", "wall\n×host-he"),
    )
    for r in rows:
        saved = r.host_cpu_saved_vs_host_he
        table.add_row(
            keys[r.config],
            U.MISSING if saved is None else f"{100 * saved:.0f} %",
            U.fmt_seconds(r.engine_cpu_s_per_round),
            _ratio(r.total_cpu_overhead_vs_raw),
            U.fmt_bytes(r.host_engine_bytes_per_round),
            _ratio(r.round_time_vs_host_he),
        )
    return table


def summary_notes(rows: Sequence[SummaryRow]) -> list[str]:
    """What the figures above do not say by themselves: where the model starts from, dropouts counted apart,
    warm-up included, the offload twin, projections."""
    notes = [*origin_notes(rows), *dropout_notes(rows)]
    cold = [r.config for r in rows if r.includes_warmup]
    if cold:
        notes.append(
            f"{', '.join(cold)}: no steady round yet, so the figures include the first (warm-up) round; "
            "run at least 2 rounds for steady-state figures"
        )
    for r in rows:
        if r.uses_engines:
            twin = r.host_he_twin or "no host-he configuration with the same settings"
            notes.append(f"{r.config} (offload) is compared with its host-he twin, {twin}")
        if r.projected_engine_s:
            p = r.projected_engine_s
            notes.append(f"{r.config}: engine time projected on {p.device}: {U.fmt_seconds(p.total_s)} per round")
    return notes


def contended(run: RunRecord | None, rows: Sequence[SummaryRow]) -> bool | None:
    """Whether the run's wall times include waiting for a core (None: not known without its run record)."""
    if run is None:
        return None
    return bool(load_notes(run, rows))


def print_summary(
    console: Console, rows: Sequence[SummaryRow], notes: Sequence[str] = (), run: RunRecord | None = None
) -> dict[str, str]:
    """The summary tables, the legend of short keys, offload against its twin (judged on evidence), then one
    entry per note; returns the keys used. ``run``: the run record, whose load flags say whether round times
    may be judged (without it they are not)."""
    keys = label_keys([r.config for r in rows])
    print_legend(console, keys)
    for table in summary_tables(rows, keys):
        console.print(table)
    console.print(
        "[dim]CPU: CPU time (OS accounting) of a party's process, or of a pooled or flower-sim client's own "
        "thread; wall: elapsed time; ×raw: ratio to raw.[/]"
    )
    print_lines(console, "verdict", "bold", offload_lines(rows, contended(run, rows)))
    print_lines(console, "note", "yellow", [*summary_notes(rows), *notes])
    return keys


def print_verdicts(
    console: Console,
    rows: Sequence[SummaryRow],
    attacks: Sequence[AttackSummaryRecord],
    run: RunRecord | None = None,
    keys: Mapping[str, str] | None = None,
    text: Sequence[TextAttackSummaryRecord] = (),
) -> None:
    """ "What to choose" and which protections defended, as the report says them, each with its evidence
    (Welch over steady rounds for costs, Wilson/Newcombe for images or sequences recovered); to print after the
    leakage table. ``run``: the run record, whose load flags keep contended round times out of the ranking;
    ``text``: a language-model run's text-attack summaries."""
    keys = keys if keys is not None else label_keys([r.config for r in rows])
    verdicts = text_verdicts(text)
    options = options_for(rows, attacks, contended=contended(run, rows), text=verdicts)  # unknown run: not ranked
    console.print("what to choose (the report's verdicts; raw is the reference):")
    print_lines(console, "", "", [*choose(options), *defence_lines(attacks), *privacy_advice(attacks)])
    print_threats(console, rows, attacks, keys, text_threats(rows, verdicts))
