"""``hebench run SUITE``: a whole federated experiment from a suite file."""

from __future__ import annotations

import datetime as dt
import os
from enum import Enum
from pathlib import Path

import typer
from rich.table import Table

from hebench.cli.common import OutputFormat, console, handle_errors, print_json, progress_bar
from hebench.errors import ParameterError
from hebench.results import read_records
from hebench.results.calibration import read_calibration
from hebench.results.records import AttackSummaryRecord
from hebench.results.run_folder import RunFolder
from hebench.results.summary import SummaryRow, summarize_run
from hebench.runtime.runner import RunEvent, Runner
from hebench.suite import Suite, load_suite


def _fmt(value: float | None, spec: str, suffix: str = "") -> str:
    return "-" if value is None else f"{value:{spec}}{suffix}"


def _bytes(n: float | None) -> str:
    if n is None:
        return "-"
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.3g}{unit}"
        n /= 1000
    return f"{n:.1f} GB"


def summary_tables(rows: list[SummaryRow]) -> list[Table]:
    """Costs and quality per configuration, each narrow enough for an 80-column terminal."""
    costs = Table(title="costs per round, per training client (×raw)")
    quality = Table(title="model quality")
    for table, cols in (
        (costs, ("CPU", "upload", "encrypt s", "decrypt s", "aggregate s")),
        (quality, ("accuracy", "loss", "max error vs plaintext FedAvg")),
    ):
        table.add_column("configuration", overflow="fold")
        for col in cols:
            table.add_column(col, justify="right", no_wrap=True)
    for r in rows:
        cw, aw = (r.engine_wall_s if r.uses_engines else r.client_wall_s), r.aggregator_wall_s
        costs.add_row(
            r.config,
            f"{_fmt(r.client_cpu_s_per_round, '.2f', 's')} {_fmt(r.cpu_overhead_vs_raw, '.1f', '×')}",
            f"{_bytes(r.upload_bytes_per_client_round)} {_fmt(r.bytes_overhead_vs_raw, '.0f', '×')}",
            _fmt(cw.get("encrypt"), ".3f"),
            _fmt(cw.get("decrypt"), ".3f"),
            _fmt(aw.get("aggregate"), ".3f"),
        )
        quality.add_row(r.config, _fmt(r.accuracy, ".3f"), _fmt(r.loss, ".3f"), _fmt(r.max_abs_error, ".1e"))
    tables = [costs, quality]
    offload = [r for r in rows if r.uses_engines]
    if offload:
        tables.append(_offload_table(offload))
    return tables


def _offload_table(rows: list[SummaryRow]) -> Table:
    table = Table(title="offload: host vs engine per round (measured; projections labelled)")
    table.add_column("configuration", overflow="fold")
    for col in ("host CPU saved vs host-he", "engine CPU", "host↔engine", "round time ×host-he", "engine on device"):
        table.add_column(col, justify="right")
    for r in rows:
        saved, proj = r.host_cpu_saved_vs_host_he, r.projected_engine_s
        table.add_row(
            r.config if r.host_he_twin is None else f"{r.config} (vs {r.host_he_twin})",
            _fmt(None if saved is None else 100 * saved, ".0f", " %"),
            _fmt(r.engine_cpu_s_per_round, ".2f", " s"),
            _bytes(r.host_engine_bytes_per_round),
            _fmt(r.round_time_vs_host_he, ".2f", "×"),
            f"{proj.total_s:.3f} s projected ({proj.device})" if proj else "-",
        )
    return table


def check_writable(run_dir: Path) -> None:
    """Fail now, not after the first configuration, when results cannot be written to ``run_dir``."""
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        probe = run_dir / f".hebench-write-check-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
        existing = run_dir / "results.jsonl"
        if existing.exists():
            with existing.open("ab"):  # appendable; nothing written
                pass
    except OSError as err:
        raise ParameterError(
            f"cannot write results to {run_dir}: {err.strerror or err}",
            "choose a writable --out folder, or fix its permissions (results already there are untouched)",
        ) from None


class Engine(str, Enum):
    hebench = "hebench"
    flower = "flower"
    flower_sim = "flower-sim"


def _runner(engine: Engine, federation: Path | None, suite: Suite, run_dir: Path, on_event) -> Runner:
    if engine is not Engine.flower and federation is not None:
        raise ParameterError("--federation needs --engine flower", "add --engine flower")
    if engine is Engine.hebench:
        return Runner(suite, run_dir, on_event)
    from hebench.flower import require_flower

    require_flower()
    if engine is Engine.flower_sim:
        from hebench.flower.simulation import FlowerSimRuntime

        return Runner(suite, run_dir, on_event, FlowerSimRuntime())
    from hebench.flower.federation import Federation
    from hebench.flower.runner import FlowerRuntime

    return Runner(suite, run_dir, on_event, FlowerRuntime(Federation.load(federation) if federation else None))


@handle_errors
def run(
    suite_file: Path = typer.Argument(..., help="suite YAML, e.g. suites/quickstart.yaml"),
    out: Path | None = typer.Option(None, help="results folder (default: results/<suite name>-<date-time>)"),
    set_: list[str] = typer.Option([], "--set", help="override a suite field, e.g. --set training.rounds=2"),
    resume: bool = typer.Option(False, help="continue a run in --out from its last completed round"),
    fmt: OutputFormat = typer.Option(OutputFormat.table, "--format", help="table or json"),
    report: bool = typer.Option(False, "--report", help="write reports/<suite>.html at the end"),
    engine: Engine = typer.Option(
        Engine.hebench,
        help="hebench: local processes; flower: Flower's deployment engine; flower-sim: its simulation engine",
    ),
    federation: Path | None = typer.Option(
        None, help="a running Flower federation (`hebench flower up DIR`); default: a loopback one for this run"
    ),
) -> None:
    """Run every configuration of a suite with the same data, seed and initial model."""
    suite = load_suite(suite_file, set_)
    if resume and out is None:
        raise ParameterError(
            "--resume needs the folder of the run to continue", "pass --out results/NAME-DATE --resume"
        )
    run_dir = out or Path("results") / f"{suite.name}-{dt.datetime.now():%Y%m%d-%H%M%S}"
    check_writable(run_dir)
    total = len(suite.configurations) * suite.training.rounds
    with progress_bar(fmt is OutputFormat.json) as progress:
        task = progress.add_task(f"{suite.name}: starting", total=total)

        def on_event(event: RunEvent) -> None:
            if event.round is None:
                if event.skipped:
                    progress.advance(task, suite.training.rounds)
                progress.update(task, description=f"{event.config}: {'done' if event.skipped else 'keys, start-up'}")
                return
            acc = (event.record or {}).get("accuracy")
            progress.update(
                task,
                description=f"{event.config}: round {event.round + 1}/{suite.training.rounds}"
                + (f" acc {acc:.3f}" if acc is not None else ""),
            )
            progress.advance(task)

        results = _runner(engine, federation, suite, run_dir, on_event).run(resume=resume)
    calibration = read_calibration(suite.offload.calibration, RunFolder.of(results))
    rows = summarize_run(read_records(results).records, calibration.data)
    report_path = None
    if report:
        from hebench.report.build import build_report

        report_path = build_report([run_dir], Path("reports") / f"{suite.name}.html")
    if fmt is OutputFormat.json:
        print_json(
            {
                "results": str(results),
                "suite_hash": suite.digest(),
                "summary": [r.to_json() for r in rows],
                "notes": [calibration.note] if calibration.note else [],
                "report": str(report_path) if report_path else None,
            }
        )
        return
    for table in summary_tables(rows):
        console.print(table)
    if calibration.note:
        console.print(f"[yellow]note:[/] {calibration.note}")
    attacks = read_records(results, kind=AttackSummaryRecord).of(AttackSummaryRecord)
    if attacks:
        from hebench.cli.attack import attack_table

        console.print(attack_table([a.to_json() for a in attacks]))
    console.print(f"[dim]records: {results}[/]")
    if report_path:
        console.print(f"report: {report_path}")
