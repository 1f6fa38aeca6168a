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
from rich.markup import escape
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
    return _guarded(fn, "")


def handle_run_errors(fn: F) -> F:
    """:func:`handle_errors` for commands that write results as they go: the message says they are kept."""
    return _guarded(fn, "; results already written are kept")


def _guarded(fn: F, kept: str) -> F:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except HebenchError as err:
            err_console.print(f"[bold red]error:[/] {escape(err.problem)}", highlight=False)
            if err.fix:
                err_console.print(f"[bold]fix:[/] {escape(err.fix)}", highlight=False)
            raise typer.Exit(err.exit_code) from None
        except OSError as err:  # a file or folder the command cannot use; what was written stays
            where = f" ({err.filename})" if err.filename else ""
            err_console.print(f"[bold red]error:[/] {escape(str(err.strerror or err))}{escape(where)}", highlight=False)
            err_console.print(f"[bold]fix:[/] check that path and its permissions{kept}", highlight=False)
            raise typer.Exit(5) from None
        except KeyboardInterrupt:
            err_console.print(f"[yellow]interrupted[/]{kept}", highlight=False)
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


def fit(label: str, width: int) -> str:
    """``label`` whole when it fits ``width`` characters, else its middle elided (progress lines only)."""
    if len(label) <= width:
        return label
    keep = max(width - 1, 2)
    return label[: (keep + 1) // 2] + "…" + label[len(label) - keep // 2 :]


def arrivals(record: dict[str, Any] | None) -> str:
    """A round's dropouts for the terminal (``7/10 arrived``, ``skipped 0/10``); empty without faults."""
    record = record or {}
    if record.get("arrived") is None or record.get("selected") is None:
        return ""
    counts = f"{record['arrived']}/{record['selected']}"
    return f"skipped {counts}" if record.get("skipped") else f"{counts} arrived"


def round_text(
    config: str,
    round_index: int,
    rounds: int,
    accuracy: float | None,
    width: int,
    elapsed: str | None = None,
    arrived: str = "",
) -> str:
    """``config: round r/n  accuracy a  [7/10 arrived]  elapsed t`` in at most ``width`` columns: shorter words
    first, then the label elided in the middle."""
    acc = "" if accuracy is None else f"{accuracy:.3f}"
    long = f"round {round_index}/{rounds}" + (f"  accuracy {acc}" if acc else "") + (f"  {arrived}" if arrived else "")
    short = f"round {round_index}/{rounds}" + (f" acc {acc}" if acc else "") + (f" {arrived}" if arrived else "")
    if elapsed:
        long, short = f"{long}  elapsed {elapsed}", f"{short} {elapsed}"
    for words in (long, short):
        if len(config) + 2 + len(words) <= width:
            return f"{config}: {words}"
    return f"{fit(config, width - len(short) - 2)}: {short}"


class RoundLines:
    """One plain line per completed round when the output is not a terminal (CI, nohup), where the
    progress bar shows nothing: configuration, round, accuracy, time since the run started; each line
    fits the console's width."""

    def __init__(self, rounds: int, out: Console) -> None:
        self.rounds, self.out = rounds, out
        self.enabled = not out.is_terminal
        self.start = time.monotonic()

    def show(self, event: Any) -> None:
        """Print ``event`` (a runner's ``RunEvent``) if it completes a round or starts a configuration."""
        if not self.enabled:
            return
        elapsed = f"{time.monotonic() - self.start:.1f}"
        width = self.out.width
        if event.round is None:
            what = "skipped (already complete)" if event.skipped else "starting"
            tail = f": {what}  elapsed {elapsed} s"
            line = f"{fit(event.config, width - len(tail))}{tail}"
        else:
            acc = (event.record or {}).get("accuracy")
            line = round_text(
                event.config, event.round + 1, self.rounds, acc, width, f"{elapsed} s", arrivals(event.record)
            )
        self.out.print(line, soft_wrap=True, highlight=False, markup=False)


def given_on_command_line(ctx: typer.Context, name: str) -> bool:
    """Whether option ``name`` was typed (not defaulted); by the source's name, as Typer 0.26 and later carry their
    own copy of click's ``ParameterSource``."""
    source = ctx.get_parameter_source(name)
    return source is not None and source.name == "COMMANDLINE"


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
