"""Shared CLI plumbing: consoles, typed-error handling, option parsing."""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable
from enum import Enum
from typing import Any, TypeVar

import typer
import yaml
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from hebench.errors import HebenchError, ParameterError

console = Console()
err_console = Console(stderr=True, soft_wrap=True)  # one message per line, whatever the width

F = TypeVar("F", bound=Callable[..., Any])


class OutputFormat(str, Enum):
    table = "table"
    json = "json"


def handle_errors(fn: F) -> F:
    """Turn a typed hebench error into one clear message and an exit code."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except HebenchError as err:
            err_console.print(f"[bold red]error:[/] {err.problem}", highlight=False)
            if err.fix:
                err_console.print(f"[bold]fix:[/] {err.fix}", highlight=False)
            raise typer.Exit(err.exit_code) from None
        except OSError as err:  # a file or folder the command cannot use; what was written stays
            where = f" ({err.filename})" if err.filename else ""
            err_console.print(f"[bold red]error:[/] {err.strerror or err}{where}", highlight=False)
            err_console.print(
                "[bold]fix:[/] check that path and its permissions; results already written are kept", highlight=False
            )
            raise typer.Exit(5) from None
        except KeyboardInterrupt:
            err_console.print("[yellow]interrupted:[/] results already written are kept")
            raise typer.Exit(130) from None

    return wrapper  # type: ignore[return-value]


def progress_bar(quiet: bool) -> Progress:
    """The progress display of long commands (hidden for --format json)."""
    return Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
        disable=quiet,
    )


class RoundLines:
    """One plain line per completed round when the output is not a terminal (CI, nohup), where the
    progress bar shows nothing: configuration, round, accuracy, time since the run started."""

    def __init__(self, rounds: int, out: Console) -> None:
        self.rounds, self.out = rounds, out
        self.enabled = not out.is_terminal
        self.start = time.monotonic()

    def show(self, event: Any) -> None:
        """Print ``event`` (a runner's ``RunEvent``) if it completes a round or starts a configuration."""
        if not self.enabled:
            return
        elapsed = f"{time.monotonic() - self.start:.1f} s"
        if event.round is None:
            what = "skipped (already complete)" if event.skipped else "starting"
            self.out.print(f"{event.config}: {what}  elapsed {elapsed}", soft_wrap=True, highlight=False, markup=False)
            return
        acc = (event.record or {}).get("accuracy")
        line = f"{event.config}: round {event.round + 1}/{self.rounds}"
        line += f"  accuracy {acc:.3f}" if acc is not None else ""
        self.out.print(f"{line}  elapsed {elapsed}", soft_wrap=True, highlight=False, markup=False)


def split_list(value: str | None) -> list[str]:
    return [item.strip() for item in (value or "").split(",") if item.strip()]


def parse_assignments(items: list[str], option: str) -> dict[str, Any]:
    """Parse ``a.b=c`` items (values as YAML scalars) into a nested dict."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise ParameterError(f"{option} '{item}' is not KEY=VALUE", f"write e.g. {option} paillier.key_bits=2048")
        node = out
        *parents, leaf = key.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = yaml.safe_load(raw)
    return out


def print_json(data: Any) -> None:
    typer.echo(json.dumps(data, indent=2, sort_keys=True, default=str))
