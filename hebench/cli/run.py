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
from hebench.cli.signals import stop_signals_raise
from hebench.config import Suite, load_suite
from hebench.config.catalog import resolve_suite
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


def _check(suite: Suite, suite_file: Path, fmt: OutputFormat) -> None:
    """``--check``: the suite is valid (data present, model within memory, adapters usable); a rough estimate."""
    from hebench.runtime.estimate import estimate_suite

    with console.status("probing this machine (data, one training step, each adapter, a party's start-up)"):
        estimate = estimate_suite(suite)
    if fmt is OutputFormat.json:
        print_json({"valid": True, **estimate.to_json()})
        return
    console.print(
        f"{suite_file}: valid: {len(suite.configurations)} configuration(s), {estimate.clients} clients "
        f"({estimate.clients_per_round} per round), {estimate.rounds} round(s), {suite.model.name} with "
        f"{estimate.parameters:,} parameters",
        highlight=False,
        soft_wrap=True,
    )
    console.print(f"rough time estimate: {rough_duration(estimate.total_s)} in all", highlight=False)
    width = max(len(c.label) for c in estimate.configurations)
    for i, c in enumerate(estimate.configurations, start=1):
        parts = f"start {c.start_s:.1f} s, then per round: train {c.train_s:.2f} s, HE {c.crypto_s:.2f} s"
        parts += f", links {c.links_s:.2f} s" if c.links_s else ""
        console.print(
            f"  {i}. {c.label:<{width}}  {rough_duration(c.total_s):>12}  ({parts})", highlight=False, soft_wrap=True
        )
    if estimate.attack_restarts:
        steps = f"up to {estimate.attack_steps} steps" if estimate.attack_steps else "the attack's default steps"
        console.print(
            f"  plus the attacks, not estimated: {estimate.attack_restarts} restart(s) of {steps} against each "
            "configuration's view",
            highlight=False,
            soft_wrap=True,
        )
    if (text := suite.text_attacks) is not None:
        console.print(
            f"  plus the text attacks, not estimated: the {text.attack} attack on each configuration's views at batch "
            f"size {', '.join(map(str, text.batch_sizes))} (text_leakage: false turns them off)",
            highlight=False,
            soft_wrap=True,
        )
    console.print(f"how: {estimate.how}", highlight=False, soft_wrap=True, style="dim")


def rough_duration(seconds: float) -> str:
    """``about 40 s``, ``about 3 min``, ``about 2.5 h``: as precise as a rough estimate deserves."""
    if seconds < 90:
        return f"about {max(1, round(seconds))} s"
    if seconds < 90 * 60:
        return f"about {round(seconds / 60)} min"
    return f"about {seconds / 3600:.1f} h"


@handle_run_errors
def run(
    suite_file: Path = typer.Argument(
        ..., metavar="SUITE", help="suite YAML file, or a shipped suite's name (hebench suites lists them): quickstart"
    ),
    out: Path | None = typer.Option(None, help="results folder (default: results/<suite name>-<date-time>)"),
    set_: list[str] = typer.Option(
        [],
        "--set",
        help="override a suite field, e.g. --set training.rounds=2; list items count from 0 "
        "(--set configurations.1.adapter=seal-bfv sets configuration 2)",
    ),
    check: bool = typer.Option(
        False, "--check", help="validate the suite and print a rough time estimate, without running it"
    ),
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
    if check:
        _check(suite, suite_file, fmt)
        return
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

        with stop_signals_raise():  # SIGTERM or SIGHUP stop a run as Ctrl-C does: its parties stopped, rounds kept
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
