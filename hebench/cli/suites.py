"""``hebench suites``: the suites shipped with hebench, which ``hebench run NAME`` runs by name."""

from __future__ import annotations

from dataclasses import asdict

import typer
from rich.markup import escape
from rich.table import Table

from hebench.cli.common import OutputFormat, console, handle_errors, print_json
from hebench.config.catalog import shipped_suites


@handle_errors
def suites(fmt: OutputFormat = typer.Option(OutputFormat.table, "--format", help="table or json")) -> None:
    """List the shipped suites (run one with hebench run NAME): what each is and how big a run."""
    found = shipped_suites()
    if fmt is OutputFormat.json:
        print_json([{**asdict(s), "path": str(s.path)} for s in found])
        return
    table = Table(title="suites shipped with hebench (hebench run NAME)")
    for col in ("name", "what", "size"):
        table.add_column(col, no_wrap=col == "name")
    for s in found:
        table.add_row(s.name, escape(s.description), escape(s.size))
    console.print(table)
