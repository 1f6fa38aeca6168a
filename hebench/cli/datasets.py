"""``hebench datasets``: what is present, and fetching what is not."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape
from rich.progress import BarColumn, DownloadColumn, Progress, TransferSpeedColumn
from rich.table import Table

from hebench.cli.common import console, handle_errors
from hebench.data.fetch import fetch, fetchable

app = typer.Typer(help="List and fetch datasets.", no_args_is_help=True)


@app.command("list")
@handle_errors
def list_() -> None:
    """Each dataset, whether it is present, and how to get it."""
    from hebench.data.presence import list_datasets

    table = Table(title="datasets")
    for col in ("dataset", "present", "where", "how to get it"):
        table.add_column(col)
    for s in list_datasets():
        table.add_row(s.name, "[green]yes[/]" if s.present else "[red]no[/]", escape(s.where), escape(s.how))
    console.print(table)


@app.command("fetch")
@handle_errors
def fetch_(
    name: str = typer.Argument(..., help="dataset with a download card: femnist"),
    path: Path | None = typer.Option(None, help="use a local copy: a LEAF/TFF folder, or the original archive"),
    base_url: str | None = typer.Option(None, help="fetch the card's files from this mirror instead"),
) -> None:
    """Download a dataset into the cache (checksummed, resumable), or register a local copy."""
    fetchable(name, path)  # a wrong name or path is said before any progress display
    with Progress(BarColumn(), DownloadColumn(), TransferSpeedColumn(), console=console, transient=True) as progress:
        task = progress.add_task("download", total=None)
        target = fetch(name, path, lambda done, total: progress.update(task, completed=done, total=total), base_url)
    console.print(f"{name}: ready in {target}")
