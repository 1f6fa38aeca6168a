"""Validation errors in users' words: the first cause, the field at fault (configurations counted from 1),
a "did you mean" for a mistyped key, and the fix."""

from __future__ import annotations

import difflib
import types
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from hebench.config.base import FieldProblem, field_name

EXAMPLE = "see suites/quickstart.yaml for a complete example"


def _block_at(root: type[BaseModel], path: tuple[int | str, ...]) -> type[BaseModel] | None:
    """The block (model class) at ``path`` from ``root`` (None: not a block, e.g. ``params``)."""
    block = root
    for part in path:
        if isinstance(part, int):
            continue  # a list item: the list's annotation already named the item's block
        field = block.model_fields.get(part)
        if field is None:
            return None
        inner = _model_in(field.annotation)
        if inner is None:
            return None
        block = inner
    return block


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The block type an annotation holds: ``X``, ``X | None``, ``tuple[X, ...]`` (None: no block)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if get_origin(annotation) in (Union, types.UnionType, tuple):
        for arg in get_args(annotation):
            found = _model_in(arg)
            if found is not None:
                return found
    return None


def _unknown_field(root: type[BaseModel], path: tuple[int | str, ...]) -> tuple[str, str]:
    """The problem and fix for an unknown key: the closest field of its block ("did you mean"), or its fields."""
    key, block = str(path[-1]), _block_at(root, path[:-1])
    fields = sorted(block.model_fields) if block is not None else []
    close = difflib.get_close_matches(key, fields, n=1, cutoff=0.6)
    if close:
        return f"unknown field '{key}'; did you mean '{close[0]}'?", f"rename '{key}' to '{close[0]}'"
    where = ".".join(str(p) for p in path[:-1]) or "the suite's top level"
    known = f"{where} takes {', '.join(fields)}" if fields else EXAMPLE
    return f"unknown field '{key}'", f"remove or rename it: {known}"


def describe(err: ValidationError, root: type[BaseModel]) -> tuple[str, str]:
    """``root``'s validation error as (problem, fix): its first cause, the field it names, and how to fix it."""
    found = err.errors()
    # a bad list item also empties the list: report the cause, not the consequence
    found = [e for e in found if e["type"] != "too_short"] or found
    first = found[0]
    path: tuple[int | str, ...] = tuple(first["loc"])
    cause = (first.get("ctx") or {}).get("error")
    if isinstance(cause, FieldProblem):  # a block's check names the field at fault
        path += tuple(int(p) if p.isdigit() else p for p in cause.field.split("."))
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    fix = f"fix that field ({EXAMPLE})"
    if first["type"] == "extra_forbidden":
        msg, fix = _unknown_field(root, path)
    else:
        msg = first["msg"].removeprefix("Value error, ")
    where = f"{field_name(path)}: " if path else ""
    return f"{where}{msg}{more}", fix
