"""``hebench report``: one self-contained HTML report from result folders and files."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape

from hebench.cli.common import console, err_console, handle_errors
from hebench.errors import ParameterError
from hebench.results.reader import read_hebench_records
from hebench.results.run_folder import results_file, unused_name

DEFAULT = Path("reports/report.html")


def output_path(chosen: Path | None, force: bool) -> tuple[Path, str | None]:
    """Where the report goes, and a note when the default name was taken. As ``hebench run``, a report is never
    overwritten silently: an existing ``chosen`` file is refused unless ``force``; the default takes the next
    free name (``report-2.html``)."""
    if chosen is None:
        path = unused_name(DEFAULT)
        return path, None if path == DEFAULT else f"{DEFAULT} is kept (an earlier report); this one is {path.name}"
    if chosen.suffix.lower() not in (".html", ".htm"):
        raise ParameterError(f"output {chosen} should end in .html", "pass e.g. -o reports/NAME.html")
    if chosen.exists() and not force:
        raise ParameterError(
            f"{chosen} already exists and would be overwritten",
            f"choose another file (e.g. -o {unused_name(chosen)}), or pass --force to replace it",
        )
    return chosen, None


@handle_errors
def report(
    results: list[Path] = typer.Argument(..., help="run folders (results.jsonl inside) or JSON-lines files"),
    output: Path | None = typer.Option(
        None, "-o", "--output", help=f"HTML file to write (default: {DEFAULT}, or the next free name beside it)"
    ),
    force: bool = typer.Option(False, "--force", help="replace an existing --output file"),
) -> None:
    """Write an offline HTML report (figures inline; PNG, SVG and CSV beside it)."""
    path, note = output_path(output, force)
    for source in results:  # a missing or foreign input is refused before anything is written
        if skipped := read_hebench_records(source).skipped_note(results_file(source)):
            err_console.print(f"[yellow]note:[/] {escape(skipped)}", highlight=False)
    from hebench.report.build import build_report

    path = build_report(results, path)
    if note:
        console.print(f"[yellow]note:[/] {note}", highlight=False, soft_wrap=True)
    console.print(f"report: {path}  (figures and tables in {path.parent / (path.stem + '_files')})")
