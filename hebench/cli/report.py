"""``hebench report``: one self-contained HTML report from result folders and files."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape

from hebench.cli.common import console, err_console, handle_errors
from hebench.errors import ParameterError
from hebench.results.reader import read_hebench_records
from hebench.results.run_folder import results_file


@handle_errors
def report(
    results: list[Path] = typer.Argument(..., help="run folders (results.jsonl inside) or JSON-lines files"),
    output: Path = typer.Option(Path("reports/report.html"), "-o", "--output", help="HTML file to write"),
) -> None:
    """Write an offline HTML report (figures inline; PNG, SVG and CSV beside it)."""
    if output.suffix.lower() not in (".html", ".htm"):
        raise ParameterError(f"output {output} should end in .html", "pass e.g. -o reports/NAME.html")
    for path in results:  # a missing or foreign input is refused before anything is written
        if skipped := read_hebench_records(path).skipped_note(results_file(path)):
            err_console.print(f"[yellow]note:[/] {escape(skipped)}", highlight=False)
    from hebench.report.build import build_report

    path = build_report(results, output)
    console.print(f"report: {path}  (figures and tables in {path.parent / (path.stem + '_files')})")
