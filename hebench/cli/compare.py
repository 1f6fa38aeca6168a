"""``hebench compare libraries``: per-operation HE costs on this host; ``hebench compare RUN_A RUN_B``: two runs."""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Sequence
from difflib import get_close_matches
from pathlib import Path
from typing import Any

import typer
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text
from typer.core import TyperGroup

from hebench.analysis.compare_runs import ALPHA, ConfigComparison, MetricComparison, compare_runs
from hebench.analysis.text_leakage import TextComparison
from hebench.analysis.threats import threat_words
from hebench.cli.common import (
    OutputFormat,
    console,
    err_console,
    handle_errors,
    parse_assignments,
    print_json,
    split_list,
)
from hebench.cli.render.threats import code
from hebench.errors import AdapterUnavailableError, ParameterError
from hebench.heops.compare import DEFAULT_ADAPTERS, DEFAULT_SIZES, Skipped, calibration, compare, split_available
from hebench.measure.environment import capture
from hebench.results import ResultWriter
from hebench.results import units as U


class _RunsByDefault(TyperGroup):
    """``compare A B`` is ``compare runs A B``: a first argument that names no subcommand is a run folder,
    unless no such path exists and it is close to a subcommand's name (``compare librarie``)."""

    def resolve_command(self, ctx: typer.Context, args: list[str]) -> Any:
        first = args[0] if args else ""
        if first and first not in self.commands and not first.startswith("-"):
            typo = get_close_matches(first, list(self.commands), n=1, cutoff=0.6)
            if typo and not Path(first).exists():
                ctx.fail(f"No such command or run folder '{first}'. Did you mean '{typo[0]}'?")
            return "runs", self.commands["runs"], args
        return super().resolve_command(ctx, args)


app = typer.Typer(
    help="Compare two runs (hebench compare RUN_A RUN_B), or HE libraries on this host (hebench compare libraries).",
    no_args_is_help=True,
    cls=_RunsByDefault,
)


def _us(seconds: float) -> str:
    us = seconds * 1e6
    if us >= 1000:
        return f"{us:,.0f}"
    return f"{us:.3g}" if us >= 1 else f"{us:.2g}"  # at most 6 characters


def _narrow(title: str, columns: tuple[str, ...]) -> Table:
    """A table for 80 columns: adapter names and numbers never cut or wrapped."""
    table = Table(title=title, box=box.SIMPLE_HEAD, show_edge=False, collapse_padding=True, title_justify="left")
    for col in columns:
        table.add_column(col, justify="left" if col == "adapter" else "right", no_wrap=True)
    return table


def _values(r: dict) -> str:
    return f"{r['size']:,}" + ("*" if r["extrapolated"] else "")


TIME_OPERATIONS = ("encrypt", "decrypt", "add", "multiply_plain", "serialize", "deserialize")


def _time_table(results: list[dict]) -> Table:
    table = _narrow(
        "µs per value (median wall time; CPU time in --format json)",
        ("adapter", "values", "encrypt", "decrypt", "add", "scalar\nmult.", "serial-\nize", "deseri-\nalize"),
    )
    for r in results:
        ops = r["operations"]
        cells = []
        for name in TIME_OPERATIONS:
            flag = "[yellow]![/]" if ops[name]["wall_s"]["unstable"] else ""
            cells.append(_us(ops[name]["wall_s_per_value"]) + flag)
        table.add_row(r["adapter"], _values(r), *cells)
    return table


def _size_table(results: list[dict]) -> Table:
    table = _narrow(
        "bytes and keys",
        ("adapter", "values", "sec\nbits", "slots", "B/value", "×f32", "keygen\ns", "pk+ctx\nMB"),
    )
    for r in results:
        b = r["bytes"]
        table.add_row(
            r["adapter"],
            _values(r),
            str(r["info"]["security_bits"]),
            f"{r['info']['slots']:,}",
            f"{b['fresh_per_value']:.1f}",
            f"{b['expansion_over_float32']:.1f}",
            f"{r['operations']['keygen']['wall_s']['median']:.3f}",
            f"{b['public_keys'] / 1e6:.2f}",
        )
    return table


def _precision_table(results: list[dict]) -> Table:
    table = _narrow(
        f"precision of a weighted sum of {results[0]['error']['clients']} vectors, and memory" if results else "",
        ("adapter", "values", "max error", "stated", "within", "peak RSS\nMiB"),
    )
    for r in results:
        err = r["error"]
        table.add_row(
            r["adapter"],
            _values(r),
            f"{err['max_abs']:.2e}",
            f"{err['stated_precision']:.2e}",
            "[green]yes[/]" if err["within_precision"] else "[red]no[/]",
            f"{r['peak_rss_bytes'] / 2**20:.0f}",
        )
    return table


def print_library_tables(results: list[dict]) -> None:
    """The three tables of ``compare libraries`` and what their marks mean (80 columns)."""
    for table in (_time_table(results), _size_table(results), _precision_table(results)):
        console.print(table)
        console.print()
    console.print(
        "[dim]scalar mult.: multiply a ciphertext by a plaintext scalar (the FedAvg weight); "
        "×f32: bytes per value against a float32[/]"
    )
    if any(r["extrapolated"] for r in results):
        console.print("[dim]* measured on a prefix of whole ciphertexts (see measured_values); costs are per value[/]")
    if any(m["wall_s"]["unstable"] for r in results for m in r["operations"].values()):
        console.print("[yellow]![/] unstable: spread above 10 % of the median; rerun on a quieter machine")


@app.command("libraries")
@handle_errors
def libraries(
    adapters: str = typer.Option(
        ",".join(DEFAULT_ADAPTERS), help="comma-separated adapter names (see `hebench backends`)"
    ),
    sizes: str = typer.Option(",".join(map(str, DEFAULT_SIZES)), help="comma-separated vector sizes"),
    param: list[str] = typer.Option([], "--param", "-p", help="adapter parameter, e.g. paillier.key_bits=2048"),
    threads: int = typer.Option(1, help="threads per library (OMP/MKL variables and the library's own setting)"),
    repeats: int = typer.Option(5, help="timed repetitions per operation"),
    budget: float = typer.Option(20.0, help="seconds per operation before measuring a prefix and extrapolating"),
    clients: int = typer.Option(3, help="vectors in the weighted-sum precision check"),
    out: Path | None = typer.Option(None, help="append JSON lines here (kept on failure)"),
    calibration_out: Path | None = typer.Option(None, help="write this host's per-operation costs (for projections)"),
    fmt: OutputFormat = typer.Option(OutputFormat.table, "--format", help="table or json"),
) -> None:
    """Benchmark keygen, encrypt, serialize, add, plaintext multiply and decrypt per adapter."""
    names = split_list(adapters)
    try:
        size_list = [int(s) for s in split_list(sizes)]
    except ValueError:
        raise ParameterError(
            f"--sizes '{sizes}' must be comma-separated integers", "e.g. --sizes 4096,1206590"
        ) from None
    params = parse_assignments(param, "--param")
    for name in params:
        if name not in names:
            raise ParameterError(f"--param names adapter '{name}', which is not in --adapters", "add it to --adapters")
    names, skipped = split_available(names)  # an unknown name raises here, before any work
    if not names:
        raise AdapterUnavailableError(
            "none of the adapters asked for imports here: " + "; ".join(f"{s.adapter}: {s.reason}" for s in skipped),
            "; ".join(f"{s.adapter}: {s.install_hint}" for s in skipped),
        )
    notes = err_console if fmt is OutputFormat.json else console  # JSON on stdout stays parseable
    total = len(names) * len(size_list)
    notes.print(f"measuring {total} (adapter, size) pairs, each in a fresh process", highlight=False, soft_wrap=True)
    if skipped:
        notes.print(f"{len(skipped)} adapter(s) skipped: why, at the end", highlight=False, soft_wrap=True)

    environment = capture()
    writer = ResultWriter(out) if out else None
    if writer:
        writer.write("environment", {"environment": environment, "command": "compare libraries"})
    results: list[dict] = []
    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
        console=console,
        transient=True,
        disable=fmt is OutputFormat.json,
    ) as progress:
        task = progress.add_task("measuring", total=total)
        started = [time.monotonic()]

        def on_start(name: str, size: int) -> None:
            started[0] = time.monotonic()
            progress.update(task, description=f"{name} × {size:,}")

        def on_result(record: dict) -> None:
            results.append(record)
            if writer:
                writer.write("library_benchmark", {"result": record})
            progress.advance(task)
            took = time.monotonic() - started[0]
            line = f"[{len(results)}/{total}] {record['adapter']} × {record['size']:,} values: {took:.1f} s"
            notes.print(line, highlight=False, markup=False, soft_wrap=True)

        try:
            compare(
                names,
                size_list,
                params,
                threads=threads,
                repeats=repeats,
                budget_s=budget,
                clients=clients,
                on_result=on_result,
                on_start=on_start,
            )
        finally:
            if writer:
                writer.close()
    if calibration_out:
        calibration_out.parent.mkdir(parents=True, exist_ok=True)
        calibration_out.write_text(json.dumps(calibration(results, environment), indent=2))
    if fmt is OutputFormat.json:
        print_json(
            {"environment": environment, "results": results, "skipped": [dataclasses.asdict(s) for s in skipped]}
        )
        return
    print_library_tables(results)
    cyc = environment["cycles"]
    console.print(f"[dim]cycles: {'perf_event' if cyc['available'] else 'not recorded — ' + cyc['reason']}[/]")
    print_skipped(skipped, console)


def print_skipped(skipped: list[Skipped], out: Console) -> None:
    """The adapters left out, each with the registry's reason and install hint."""
    for s in skipped:
        out.print(f"[yellow]skipped {s.adapter}[/]: {escape(s.reason)}", highlight=False)
        out.print(f"  install: {escape(s.install_hint)}", highlight=False)


def _verdict(m: MetricComparison) -> str:
    if m.p_value is not None:
        return f"{m.verdict} (p={m.p_value:.2g})"
    return m.verdict


def _runs_table(config: ConfigComparison, a: str, b: str) -> Table:
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    table.add_column("metric", no_wrap=True)
    for col in ("A", "B", "B/A"):
        table.add_column(col, justify="right", no_wrap=True)
    table.add_column("over steady rounds", no_wrap=True)
    for m in config.metrics:
        fmt = U.fmt_seconds if m.unit == "s" else U.fmt_bytes
        ratio = U.MISSING if m.ratio is None else f"{m.ratio:.3g}×"
        table.add_row(m.metric, fmt(m.a), fmt(m.b), ratio, _verdict(m))
    return table


def _text_table(text: Sequence[TextComparison]) -> Table:
    """Each view's text-leakage verdict in A beside B (:mod:`hebench.analysis.text_leakage`, as ``show`` and the
    report state them)."""
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, title="text leakage (exact sequences)")
    for col in ("configuration · view", "adv.", "b", "A", "B", "B vs A"):
        table.add_column(col, overflow="fold")
    for t in text:
        table.add_row(
            f"{t.config} · {t.view}",
            code(t.threat),
            str(t.batch_size),
            t.a.line if t.a else U.MISSING,
            t.b.line if t.b else U.MISSING,
            t.verdict,
        )
    return table


@app.command("runs")
@handle_errors
def runs(
    run_a: Path = typer.Argument(..., help="the baseline run folder (A)"),
    run_b: Path = typer.Argument(..., help="the run compared with it (B)"),
    fmt: OutputFormat = typer.Option(OutputFormat.table, "--format", help="table or json"),
) -> None:
    """Ratios B/A per configuration (client CPU time, upload bytes, round wall time) over steady rounds,
    with Welch's t-test: 'not significant' where the rounds cannot tell the runs apart."""
    result = compare_runs(run_a, run_b)
    if fmt is OutputFormat.json:
        print_json(dataclasses.asdict(result))
        return
    console.print(f"A = {run_a}", soft_wrap=True, highlight=False)
    console.print(f"B = {run_b}", soft_wrap=True, highlight=False)
    if result.warnings:
        warnings = Table.grid(padding=(0, 1))  # a long warning wraps under its own text, not under the tag
        warnings.add_column(no_wrap=True)
        warnings.add_column()
        for warning in result.warnings:
            warnings.add_row("[yellow]warning:[/]", Text(warning))
        console.print(warnings)
    for config in result.configs:
        console.print(f"\n[bold]{config.config}[/]", soft_wrap=True, highlight=False)
        if config.only_in:
            console.print(f"  only in run {config.only_in}: nothing to compare", highlight=False)
            continue
        console.print(_runs_table(config, result.a, result.b))
    if result.text:
        console.print()
        console.print(_text_table(result.text))
        adversaries = dict.fromkeys(t.threat for t in result.text)
        console.print(
            "[dim]adv.: the adversary the view stands for, as in show's threat matrix: "
            + "; ".join(f"{code(k)}: {threat_words(k)}" for k in adversaries)
            + "[/]",
            highlight=False,
        )
    console.print(
        "[dim]B/A: ratio of steady-round means; significance: Welch's t-test over steady rounds, two-sided, "
        f"p < {ALPHA}. CPU: OS-accounted CPU time (process, or thread for pooled and flower-sim clients); "
        "wall: elapsed time."
        + (" Text leakage: exact-sequence rates compared on Newcombe's 95 % interval." if result.text else "")
        + "[/]"
    )
