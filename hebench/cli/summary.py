"""The run summary ``hebench run`` prints: narrow tables (80 columns) over steady rounds, then notes."""

from __future__ import annotations

from collections.abc import Sequence

from rich import box
from rich.console import Console
from rich.table import Table

from hebench.cli.legend import label_keys, print_legend
from hebench.results import units as U
from hebench.results.summary import SummaryRow


def _ratio(r: float | None) -> str:
    return U.MISSING if r is None else f"{r:.3g}×"


def _table(title: str, first: str, columns: Sequence[str]) -> Table:
    table = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False, title_justify="left")
    table.add_column(first, no_wrap=True)
    for col in columns:
        table.add_column(col, justify="right", no_wrap=True)
    return table


def _steady_title(rows: Sequence[SummaryRow]) -> str:
    warm = max((r.warmup_rounds for r in rows), default=0)
    return f"per steady round ({warm} warm-up round{'s' if warm != 1 else ''} left out)" if warm else "per round"


def summary_tables(rows: Sequence[SummaryRow], keys: dict[str, str]) -> list[Table]:
    """Costs (CPU time, bytes, wall time, each ×raw), their spread, phases and quality, offload."""
    steady = _steady_title(rows)
    costs = _table(
        f"costs per client {steady}",
        "config",
        ("client\nCPU", "CPU\n×raw", "upload", "upload\n×raw", "round\nwall", "wall\n×raw"),
    )
    spread = _table("spread: min–max over steady rounds", "config", ("client CPU", "upload", "round wall"))
    phases = _table(
        "wall time per phase, and quality",
        "config",
        ("encrypt\nwall", "decrypt\nwall", "aggr.\nwall", "accuracy", "max\nerror"),
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
            U.MISSING if r.accuracy is None else f"{r.accuracy:.3f}",
            U.MISSING if r.max_abs_error is None else f"{r.max_abs_error:.1e}",
        )
    tables = [costs, spread, phases]
    offload = [r for r in rows if r.uses_engines]
    if offload:
        tables.append(_offload_table(offload, keys))
    return tables


def _offload_table(rows: Sequence[SummaryRow], keys: dict[str, str]) -> Table:
    table = _table(
        "offload against its host-he twin (measured)",
        "config",
        ("host CPU\nsaved", "engine\nCPU", "host↔engine\nbytes", "round wall\n×host-he"),
    )
    for r in rows:
        saved = r.host_cpu_saved_vs_host_he
        table.add_row(
            keys[r.config],
            U.MISSING if saved is None else f"{100 * saved:.0f} %",
            U.fmt_seconds(r.engine_cpu_s_per_round),
            U.fmt_bytes(r.host_engine_bytes_per_round),
            _ratio(r.round_time_vs_host_he),
        )
    return table


def summary_notes(rows: Sequence[SummaryRow]) -> list[str]:
    """What the figures above do not say by themselves: warm-up included, projections."""
    notes = []
    cold = [r.config for r in rows if r.includes_warmup]
    if cold:
        notes.append(
            f"{', '.join(cold)}: no steady round yet, so the figures include the first (warm-up) round; "
            "run at least 2 rounds for steady-state figures"
        )
    for r in rows:
        if r.uses_engines:
            twin = r.host_he_twin or "no host-he configuration with the same settings"
            notes.append(f"offload {r.config} is compared with its host-he twin: {twin}")
        if r.projected_engine_s:
            p = r.projected_engine_s
            notes.append(f"{r.config}: engine time projected on {p.device}: {U.fmt_seconds(p.total_s)} per round")
    return notes


def print_summary(console: Console, rows: Sequence[SummaryRow], notes: Sequence[str] = ()) -> dict[str, str]:
    """The summary tables, the legend of short keys, then one line per note; returns the keys used."""
    keys = label_keys([r.config for r in rows])
    print_legend(console, keys)
    for table in summary_tables(rows, keys):
        console.print(table)
    console.print(
        "[dim]CPU: CPU time (OS accounting) of a party's process, or of a pooled or flower-sim client's own "
        "thread; wall: elapsed time; ×raw: ratio to raw.[/]"
    )
    for note in [*summary_notes(rows), *notes]:
        console.print(f"[yellow]note:[/] {note}", highlight=False)
    return keys
