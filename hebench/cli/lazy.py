"""Subcommands imported only when they run, so ``hebench --version`` and ``--help`` start in well under a second.

The root group lists every subcommand by name and one-line help (what ``--help`` shows) and imports a
command's module (and with it torch, matplotlib or an HE library) only when that command is resolved to run,
complete or show its own help.

Only Typer's own API is used: Typer 0.26 and later carry a private copy of click (``typer._click``), so a class or
exception of the ``click`` package is not what such a Typer builds or raises.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from difflib import get_close_matches
from typing import Any, ClassVar

import typer
from typer.core import TyperCommand, TyperGroup


@dataclass(frozen=True)
class LazyCommand:
    """Where a subcommand lives: ``module.attribute`` is a command function or a ``typer.Typer`` group."""

    module: str
    attribute: str
    help: str  # the first line of the command's own help (a test keeps the two equal)


def _noop() -> None:
    """Makes a one-command Typer a group, so every subcommand is built the same way."""


def load_command(name: str, spec: LazyCommand) -> TyperCommand | TyperGroup:
    """Import ``spec``'s module and build its click command under ``name``."""
    target = getattr(importlib.import_module(spec.module), spec.attribute)
    holder = typer.Typer(add_completion=False)
    holder.callback()(_noop)
    if isinstance(target, typer.Typer):
        holder.add_typer(target, name=name)
    else:
        holder.command(name)(target)
    group = typer.main.get_command(holder)
    assert isinstance(group, TyperGroup)
    return group.commands[name]


class _Listed(TyperCommand):
    """A subcommand as ``--help`` lists it: name and help, nothing imported."""


class LazyGroup(TyperGroup):
    """A Typer group whose subcommands (``lazy``, set by a subclass) import on first use."""

    lazy: ClassVar[dict[str, LazyCommand]] = {}

    def list_commands(self, ctx: typer.Context) -> list[str]:
        return [*super().list_commands(ctx), *(n for n in self.lazy if n not in self.commands)]

    def get_command(self, ctx: typer.Context, cmd_name: str) -> Any:
        if cmd_name in self.commands:
            return self.commands[cmd_name]
        spec = self.lazy.get(cmd_name)
        return None if spec is None else _Listed(cmd_name, help=spec.help, short_help=spec.help)

    def resolve_command(self, ctx: typer.Context, args: list[str]) -> tuple[str | None, Any, list[str]]:
        first = args[0] if args else ""
        known = self.list_commands(ctx)
        if first and not first.startswith("-") and first not in known and not ctx.resilient_parsing:
            # Typer suggests only among the commands already imported: suggest among all of them
            matches = get_close_matches(first, known)
            if matches:
                ctx.fail(f"No such command {first!r}. Did you mean {', '.join(repr(m) for m in matches)}?")
        name, cmd, rest = super().resolve_command(ctx, args)
        if isinstance(cmd, _Listed) and name is not None:
            cmd = self.commands[name] = load_command(name, self.lazy[name])
        return name, cmd, rest
