"""``hebench show RUN``: a finished run's summary again, read from its records; the folder is left untouched."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape

from hebench.analysis.load_flags import load_notes
from hebench.analysis.score_notes import vifp_note
from hebench.analysis.summary import SummaryRow, summarize_run
from hebench.cli.common import OutputFormat, console, err_console, handle_errors, print_json
from hebench.links.outcomes import on_their_links
from hebench.results.calibration import read_calibration
from hebench.results.reader import read_hebench_records
from hebench.results.records import AttackSummaryRecord, Record, RunFailedRecord, RunRecord, TextAttackSummaryRecord
from hebench.results.run_folder import RunFolder, results_file


@dataclass(frozen=True)
class RunView:
    """What ``hebench run`` prints at its end, computed from a results file alone."""

    results: Path
    run: RunRecord | None
    rows: list[SummaryRow]
    notes: list[str]
    attacks: list[dict[str, Any]]
    attack_records: tuple[AttackSummaryRecord, ...] = ()
    records: tuple[Record, ...] = ()
    skipped: str | None = None  # how many lines of the file could not be read, and why
    text_attacks: tuple[TextAttackSummaryRecord, ...] = ()  # a language-model run's text leakage

    def to_json(self) -> dict[str, Any]:
        return {
            "results": str(self.results),
            "suite_hash": self.run.suite_hash if self.run else None,
            "summary": [r.to_json() for r in self.rows],
            "notes": self.notes,
            "attacks": self.attacks,
            "text_attacks": [r.to_json() for r in self.text_attacks],
        }


def _failure(records: list[Record]) -> str | None:
    """Why the latest attempt stopped early (None: it did not, or it was resumed since)."""
    latest: RunFailedRecord | None = None
    for rec in records:
        if isinstance(rec, RunRecord):
            latest = None
        elif isinstance(rec, RunFailedRecord):
            latest = rec
    if latest is None:
        return None
    where = f" in '{latest.config}'" if latest.config else ""
    return f"the run failed{where}: {latest.problem} ({latest.error}); its summary covers the rounds completed"


def run_view(path: Path) -> RunView:
    """Read a run folder (or its results file) into its summary rows, notes and attack summaries."""
    file = results_file(path)
    read = read_hebench_records(file)
    records, on_links = on_their_links(read.records)  # round walls on the links, as the report
    run = next((r for r in reversed(records) if isinstance(r, RunRecord)), None)
    suite_offload = (run.suite.get("offload") or {}) if run else {}
    calibration = read_calibration(suite_offload.get("calibration"), RunFolder.of(file))
    rows = summarize_run(records, calibration.data)
    failure = _failure(records)
    notes = [
        *load_notes(run, rows),
        *on_links,
        *([calibration.note] if calibration.note else []),
        *([failure] if failure else []),
    ]
    attack_records = tuple(r for r in records if isinstance(r, AttackSummaryRecord))
    attacks = [r.to_json() for r in attack_records]
    text = tuple(r for r in records if isinstance(r, TextAttackSummaryRecord))
    return RunView(file, run, rows, notes, attacks, attack_records, tuple(records), read.skipped_note(file), text)


def print_run_view(out: Console, view: RunView) -> None:
    """The summary tables and notes (:func:`hebench.cli.render.summary.print_summary`), the per-link table when
    configurations ran on links, the leakage table, then
    "what to choose" with its evidence (:func:`hebench.cli.render.summary.print_verdicts`)."""
    from hebench.cli.render.attacks import attack_table
    from hebench.cli.render.legend import label_keys, print_legend
    from hebench.cli.render.lines import print_lines
    from hebench.cli.render.links import links_table
    from hebench.cli.render.summary import print_summary, print_verdicts
    from hebench.cli.render.text_attacks import print_text_leakage

    keys = print_summary(out, view.rows, view.notes, view.run) if view.rows else {}
    if (links := links_table(view.records, keys)) is not None:  # configurations that ran on links
        out.print(links)
    if view.attacks:
        plans = [a["plan"] for a in view.attacks]
        if not all(p in keys for p in plans):  # plans beyond the configurations: keys of their own
            keys = label_keys(plans)
            print_legend(out, keys)
        out.print(attack_table(view.attacks, keys))
        print_lines(out, "note", "yellow", vifp_note(view.attack_records))
    print_text_leakage(out, view.text_attacks)
    if view.rows:
        print_verdicts(out, view.rows, view.attack_records, view.run, keys, view.text_attacks)
    out.print(f"[dim]records: {view.results}[/]", highlight=False, soft_wrap=True)


@handle_errors
def show(
    run_dir: Path = typer.Argument(..., help="a run folder written by `hebench run` (or its results.jsonl)"),
    fmt: OutputFormat = typer.Option(OutputFormat.table, "--format", help="table or json"),
) -> None:
    """Print a finished run's summary tables again, from its records alone."""
    view = run_view(run_dir)
    if view.skipped:  # on stderr: JSON on stdout stays JSON
        err_console.print(f"[yellow]note:[/] {escape(view.skipped)}", highlight=False)
    if fmt is OutputFormat.json:
        print_json(view.to_json())
        return
    if not view.rows and not view.attacks and not view.text_attacks:
        console.print(f"{view.results} holds no configuration or attack summary yet", highlight=False)
    print_run_view(console, view)
