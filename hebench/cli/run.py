"""``hebench run SUITE``: a whole federated experiment from a suite file."""

from __future__ import annotations

import datetime as dt
import os
from enum import Enum
from pathlib import Path

import typer

from hebench.cli.common import OutputFormat, RoundLines, console, err_console, handle_errors, print_json, progress_bar
from hebench.cli.legend import label_keys, print_legend
from hebench.cli.links import links_table
from hebench.cli.summary import print_summary
from hebench.errors import ParameterError
from hebench.results import read_records
from hebench.results.calibration import read_calibration
from hebench.results.load_flags import load_notes
from hebench.results.records import AttackSummaryRecord, RunRecord
from hebench.results.run_folder import RunFolder
from hebench.results.summary import summarize_run
from hebench.runtime.runner import RunEvent, Runner
from hebench.suite import Suite, load_suite


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
    report: bool = typer.Option(True, "--report/--no-report", help="write reports/<suite>.html at the end"),
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
    lines = RoundLines(suite.training.rounds, err_console if fmt is OutputFormat.json else console)
    with progress_bar(fmt is OutputFormat.json or lines.enabled) as progress:
        task = progress.add_task(f"{suite.name}: starting", total=total)

        def on_event(event: RunEvent) -> None:
            lines.show(event)
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
    records = read_records(results).records
    rows = summarize_run(records, calibration.data)
    run_record = next((r for r in reversed(records) if isinstance(r, RunRecord)), None)
    notes = [*load_notes(run_record, rows), *([calibration.note] if calibration.note else [])]
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
                "notes": notes,
                "report": str(report_path) if report_path else None,
            }
        )
        return
    keys = print_summary(console, rows, notes)
    if (links := links_table(records, keys)) is not None:  # configurations that ran on links
        console.print(links)
    attacks = [r.to_json() for r in records if isinstance(r, AttackSummaryRecord)]
    if attacks:
        from hebench.cli.attack import attack_table

        plans = [a["plan"] for a in attacks]
        if not all(p in keys for p in plans):  # plans beyond the configurations: keys of their own
            keys = label_keys(plans)
            print_legend(console, keys)
        console.print(attack_table(attacks, keys))
    console.print(f"[dim]records: {results}[/]")
    if report_path:
        console.print(f"report: {report_path}")
