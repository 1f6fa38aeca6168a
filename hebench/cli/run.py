"""``hebench run SUITE``: a whole federated experiment from a suite file."""

from __future__ import annotations

import datetime as dt
import os
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from hebench.cli.common import (
    OutputFormat,
    RoundLines,
    arrivals,
    console,
    err_console,
    fit,
    handle_run_errors,
    print_json,
    progress_bar,
    round_text,
)
from hebench.cli.show import print_run_view, run_view
from hebench.config.catalog import resolve_suite
from hebench.config.suite import Suite, load_suite
from hebench.errors import ParameterError
from hebench.results.run_folder import RunFolder, unused_name

if TYPE_CHECKING:
    from hebench.runtime.runner import RunEvent, Runner

PROGRESS_TEXT = 44  # columns the progress bar's description may take (bar, counts and time beside it)


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


def report_path(run_dir: Path, chosen: Path | None) -> tuple[Path, str | None]:
    """Where the run's report goes, and a note when the default name was taken; an existing ``chosen`` file is
    refused before the run starts (a report is never overwritten)."""
    if chosen is not None:
        if chosen.suffix.lower() not in (".html", ".htm"):
            raise ParameterError(f"--report {chosen} should end in .html", "pass e.g. --report reports/NAME.html")
        if chosen.exists():
            raise ParameterError(
                f"--report {chosen} already exists and would be overwritten",
                "choose another file, or move that one away first",
            )
        return chosen, None
    default = RunFolder(run_dir).report
    path = unused_name(default)
    note = None if path == default else f"{default} is kept (an earlier report of this run); this one is {path.name}"
    return path, note


def _runner(engine: Engine, federation: Path | None, suite: Suite, run_dir: Path, on_event) -> Runner:
    from hebench.runtime.runner import Runner

    if engine is not Engine.flower and federation is not None:
        raise ParameterError("--federation needs --engine flower", "add --engine flower")
    if engine is Engine.hebench:
        return Runner(suite, run_dir, on_event)
    from hebench.runtime.flower import require_flower

    local_only = [c.label for c in suite.configurations if c.spec.flower_cipher is None]
    if local_only:  # their parties (secagg's rounds, share holders, the decryptor) exist on the local runtime only
        raise ParameterError(
            f"{', '.join(local_only)} cannot run on --engine {engine.value}: the mode has no Flower cipher",
            "run them on hebench's local runtime (leave out --engine), or drop them from this suite",
        )
    require_flower()
    if engine is Engine.flower_sim:
        from hebench.runtime.flower.simulation import FlowerSimRuntime

        return Runner(suite, run_dir, on_event, FlowerSimRuntime())
    from hebench.runtime.flower.federation import Federation
    from hebench.runtime.flower.runner import FlowerRuntime

    return Runner(suite, run_dir, on_event, FlowerRuntime(Federation.load(federation) if federation else None))


@handle_run_errors
def run(
    suite_file: Path = typer.Argument(
        ..., metavar="SUITE", help="suite YAML file, or a shipped suite's name (hebench suites lists them): quickstart"
    ),
    out: Path | None = typer.Option(None, help="results folder (default: results/<suite name>-<date-time>)"),
    set_: list[str] = typer.Option([], "--set", help="override a suite field, e.g. --set training.rounds=2"),
    resume: bool = typer.Option(False, help="continue a run in --out from its last completed round"),
    fmt: OutputFormat = typer.Option(OutputFormat.table, "--format", help="table or json"),
    report: Path | None = typer.Option(
        None, "--report", help="HTML report file (default: report.html in the run folder; never overwritten)"
    ),
    no_report: bool = typer.Option(False, "--no-report", help="write no HTML report"),
    engine: Engine = typer.Option(
        Engine.hebench,
        help="hebench: local processes; flower: Flower's deployment engine; flower-sim: its simulation engine",
    ),
    federation: Path | None = typer.Option(
        None, help="a running Flower federation (`hebench flower up DIR`); default: a loopback one for this run"
    ),
) -> None:
    """Run every configuration of a suite with the same data, seed and initial model."""
    suite = load_suite(resolve_suite(suite_file), set_)
    if resume and out is None:
        raise ParameterError(
            "--resume needs the folder of the run to continue", "pass --out results/NAME-DATE --resume"
        )
    if no_report and report is not None:
        raise ParameterError("--report and --no-report contradict each other", "drop one of them")
    run_dir = out or Path("results") / f"{suite.name}-{dt.datetime.now():%Y%m%d-%H%M%S}"
    check_writable(run_dir)
    target, report_note = (None, None) if no_report else report_path(run_dir, report)
    total = len(suite.configurations) * suite.training.rounds
    lines = RoundLines(suite.training.rounds, err_console if fmt is OutputFormat.json else console)
    with progress_bar(fmt is OutputFormat.json or lines.enabled) as progress:
        task = progress.add_task(f"{suite.name}: starting", total=total)

        def on_event(event: RunEvent) -> None:
            lines.show(event)
            if event.round is None:
                if event.skipped:
                    progress.advance(task, suite.training.rounds)
                what = "done" if event.skipped else "keys, start-up"
                progress.update(task, description=f"{fit(event.config, PROGRESS_TEXT - len(what) - 2)}: {what}")
                return
            acc = (event.record or {}).get("accuracy")
            text = round_text(
                event.config, event.round + 1, suite.training.rounds, acc, PROGRESS_TEXT, None, arrivals(event.record)
            )
            progress.update(task, description=text)
            progress.advance(task)

        results = _runner(engine, federation, suite, run_dir, on_event).run(resume=resume)
    view = run_view(results)
    if target is not None:
        from hebench.report.build import build_report

        target = build_report([run_dir], target)
    if fmt is OutputFormat.json:
        print_json(
            {
                **view.to_json(),
                "suite_hash": suite.digest(),
                "report": str(target) if target else None,
                "report_note": report_note,
            }
        )
        return
    print_run_view(console, view)
    if target is not None:
        console.print(f"report: {target}", highlight=False, soft_wrap=True)
        if report_note:
            console.print(f"[yellow]note:[/] {report_note}", highlight=False)
