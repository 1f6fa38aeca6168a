"""Subcommands imported only when they run, so ``hebench --version`` and ``--help`` start in well under a second.

The root group lists every subcommand by name and one-line help (what ``--help`` shows) and imports a
command's module (and with it torch, matplotlib or an HE library) only when that command is resolved to run,
complete or show its own help.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from difflib import get_close_matches
from typing import ClassVar

import click
import typer
from typer.core import TyperGroup


@dataclass(frozen=True)
class LazyCommand:
    """Where a subcommand lives: ``module.attribute`` is a command function or a ``typer.Typer`` group."""

    module: str
    attribute: str
    help: str  # the first line of the command's own help (a test keeps the two equal)


def _noop() -> None:
    """Makes a one-command Typer a group, so every subcommand is built the same way."""


def load_command(name: str, spec: LazyCommand) -> click.Command:
    """Import ``spec``'s module and build its click command under ``name``."""
    target = getattr(importlib.import_module(spec.module), spec.attribute)
    holder = typer.Typer(add_completion=False)
    holder.callback()(_noop)
    if isinstance(target, typer.Typer):
        holder.add_typer(target, name=name)
    else:
        holder.command(name)(target)
    group = typer.main.get_command(holder)
    assert isinstance(group, click.Group)
    return group.commands[name]


class _Listed(click.Command):
    """A subcommand as ``--help`` lists it: name and help, nothing imported."""


class LazyGroup(TyperGroup):
    """A Typer group whose subcommands (``lazy``, set by a subclass) import on first use."""

    lazy: ClassVar[dict[str, LazyCommand]] = {}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [*super().list_commands(ctx), *(n for n in self.lazy if n not in self.commands)]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.commands:
            return self.commands[cmd_name]
        spec = self.lazy.get(cmd_name)
        return None if spec is None else _Listed(cmd_name, help=spec.help, short_help=spec.help)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        try:
            name, cmd, rest = click.Group.resolve_command(self, ctx, args)
        except click.UsageError as err:
            matches = get_close_matches(args[0], self.list_commands(ctx)) if args else []
            if matches:
                err.message = f"{err.message.rstrip('.')}. Did you mean {', '.join(repr(m) for m in matches)}?"
            raise
        if isinstance(cmd, _Listed) and name is not None:
            cmd = self.commands[name] = load_command(name, self.lazy[name])
        return name, cmd, rest
