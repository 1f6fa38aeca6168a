"""Read a results file into typed records, migrating older schemas; say what could not be read, and why."""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from hebench.errors import ParameterError, RecordError
from hebench.results.migrations import migrate
from hebench.results.records import Record, record_class
from hebench.results.run_folder import results_file

R = TypeVar("R", bound=Record)
MAX_DEPTH = 64  # nesting levels a line may have: hebench's deepest (a run's stored suite) is about 8


@dataclass(frozen=True)
class ReadResult:
    """The records of one file, in file order, and the lines that could not be read."""

    records: list[Record]
    skipped: int = 0  # lines not read: half-written, another program's, newer schema, or invalid
    problems: list[str] = field(default_factory=list)  # why, one line per distinct reason
    migrated: Counter[int] = field(default_factory=Counter)  # schema version → lines migrated from it

    def of(self, cls: type[R]) -> list[R]:
        """The records of one class."""
        return [r for r in self.records if isinstance(r, cls)]

    def skipped_note(self, file: str | os.PathLike[str]) -> str | None:
        """One line saying how many lines of ``file`` were skipped and why (None: none was)."""
        if not self.skipped:
            return None
        return f"{self.skipped} line(s) of {file} skipped (what remains is read as usual): {'; '.join(self.problems)}"


def read_records(path: str | os.PathLike[str], kind: str | type[Record] | None = None) -> ReadResult:
    """Every record in ``path`` (optionally one kind, by name or class) as typed records."""
    wanted = record_class(kind) if isinstance(kind, str) else kind
    records: list[Record] = []
    skipped, reasons, migrated = 0, dict[str, tuple[int, int]](), Counter[int]()
    for number, text in _lines(Path(path)):
        try:
            raw = json.loads(text)
            if not isinstance(raw, dict):
                raise ValueError("not a JSON object")
            _check_depth(raw)
            original = raw.get("schema")
            line = migrate(raw)
            if wanted is not None and line.get("kind") != wanted.kind:
                continue
            rec = record_class(str(line.get("kind"))).from_json(line)
        except (ValueError, RecordError, RecursionError) as err:  # json.JSONDecodeError is a ValueError; a line
            # deeper than the JSON parser can go is a RecursionError
            skipped += 1
            count, first = reasons.get(_reason(err), (0, number))
            reasons[_reason(err)] = (count + 1, first)
            continue
        if original != line["schema"]:
            migrated[int(str(original).rsplit("/", 1)[1])] += 1
        records.append(rec)
    problems = [f"{reason} ({n} line(s), first at line {first})" for reason, (n, first) in reasons.items()]
    return ReadResult(records, skipped, problems, migrated)


def read_hebench_records(path: str | os.PathLike[str]) -> ReadResult:
    """The records of a run folder or JSON-lines file; :class:`ParameterError` when it is missing, of another
    kind, or holds no hebench record (a foreign file is refused, never read as an empty run)."""
    file = results_file(path)
    try:
        result = read_records(file)
    except OSError as err:
        raise ParameterError(
            f"cannot read {file}: {err.strerror or err}", "check the path and its permissions"
        ) from None
    if not result.records:
        why = f" ({result.problems[0]})" if result.problems else " (it is empty)"
        raise ParameterError(f"{file} holds no hebench records{why}", "pass a run folder written by `hebench run`")
    return result


_TOO_DEEP = f"a line nests deeper than {MAX_DEPTH} levels (no hebench record does)"


def _check_depth(value: object) -> None:
    """ValueError when ``value`` nests deeper than :data:`MAX_DEPTH` (walked without recursion)."""
    level: list[object] = [value]
    for _ in range(MAX_DEPTH + 1):
        level = [v for item in level if isinstance(item, (dict, list)) for v in _children(item)]
        if not level:
            return
    raise ValueError(_TOO_DEEP)


def _children(item: dict | list) -> list[object]:
    return [v for v in (item.values() if isinstance(item, dict) else item) if isinstance(v, (dict, list))]


def _reason(err: Exception) -> str:
    if isinstance(err, RecursionError):
        return _TOO_DEEP
    if isinstance(err, json.JSONDecodeError):
        return "a line is not JSON (an interrupted write?)"
    return str(err)


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    with path.open(encoding="utf-8", errors="replace") as fh:
        for number, line in enumerate(fh, 1):
            if line.strip():
                yield number, line
