"""Migrations of older result lines to the current schema, one step per version.

Each step takes one line (a JSON object) of schema N and returns it as
schema N+1. ``migrate`` chains the steps, so a file written by any earlier
hebench loads and reports as if written today.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hebench.results.records import SCHEMA

PREFIX = "hebench.results/"
Line = dict[str, Any]


def _v1_to_v2(line: Line) -> Line:
    """hebench.results/1 → /2.

    v1 left fields out that v2 states: a configuration's runtime (local runs had
    none); whether its selective spec was recorded at all (early v1 writers left
    it out: then it is unknown here, and readers look it up in the run's suite);
    a phase's cycles (absent where not counted).
    """
    out = dict(line)
    if out.get("kind") == "configuration":
        out.setdefault("runtime", "hebench")
        out["selective_recorded"] = "selective" in out
    for holder in (out, out.get("engine")):
        if isinstance(holder, dict) and isinstance(holder.get("phases"), dict):
            holder["phases"] = {
                name: {"cycles": None, **phase} if isinstance(phase, dict) else phase
                for name, phase in holder["phases"].items()
            }
    out["schema"] = PREFIX + "2"
    return out


STEPS: dict[int, Callable[[Line], Line]] = {1: _v1_to_v2}
CURRENT = int(SCHEMA.removeprefix(PREFIX))


def version(line: Line) -> int | None:
    """The schema version of a line; None if it is not a hebench results line."""
    schema = line.get("schema")
    if not isinstance(schema, str) or not schema.startswith(PREFIX):
        return None
    try:
        return int(schema.removeprefix(PREFIX))
    except ValueError:
        return None


def migrate(line: Line) -> Line:
    """``line`` brought to the current schema; raises ValueError for a version no step leads from."""
    v = version(line)
    if v is None:
        raise ValueError(f"not a hebench results line (schema {line.get('schema')!r})")
    if v > CURRENT:
        raise ValueError(f"written by a newer hebench (schema {v}, this one reads up to {CURRENT})")
    while v < CURRENT:
        if v not in STEPS:
            raise ValueError(f"no migration from schema {v}")
        line, v = STEPS[v](line), v + 1
    return line
