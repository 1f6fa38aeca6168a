"""``hebench backends``: every adapter, whether it imports here, and how to install it."""

from __future__ import annotations

from dataclasses import asdict

import typer
from rich.markup import escape
from rich.table import Table

from hebench.cli.common import OutputFormat, console, handle_errors, print_json
from hebench.crypto.registry import list_adapters


@handle_errors
def backends(fmt: OutputFormat = typer.Option(OutputFormat.table, "--format", help="table or json")) -> None:
    """List HE adapters: version, scheme, and for unavailable ones why and how to install."""
    statuses = list_adapters()
    if fmt is OutputFormat.json:
        print_json([asdict(s) for s in statuses])
        return
    table = Table(title="HE adapters")
    for col in ("adapter", "scheme", "library", "version", "status"):
        table.add_column(col)
    for s in statuses:
        state = (
            "[green]available[/]"
            if s.available
            else f"[red]unavailable[/]: {escape(s.reason)}\n[dim]install: {escape(s.install_hint)}[/]"
        )
        table.add_row(s.name, s.scheme, s.library, s.version or "-", state)
    console.print(table)
