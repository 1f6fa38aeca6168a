"""Results as schema-versioned JSON lines, appended and flushed as they happen.

Each line is one record: ``{"schema": ..., "kind": ..., "time": ..., ...}``.
An interrupted run keeps every line already written; readers skip (and count)
lines that do not parse, such as a half-written last line.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SCHEMA = "hebench.results/1"  # the typed records in records.py are hebench.results/2 (next commit)


class ResultWriter:
    """Append-only JSON-lines writer; every record is flushed to disk at once."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = self.path.open("a", encoding="utf-8")

    def write(self, kind: str, record: dict[str, Any]) -> dict[str, Any]:
        line = {"schema": SCHEMA, "kind": kind, "time": time.time(), **record}
        self._fh.write(json.dumps(line, sort_keys=True, default=_jsonable) + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())
        return line

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> ResultWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _jsonable(value: Any) -> Any:
    if hasattr(value, "tolist"):
        return value.tolist()
    if hasattr(value, "to_dict"):
        return value.to_dict()
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


@dataclass(frozen=True)
class ReadResult:
    records: list[dict[str, Any]]
    skipped: int  # lines that did not parse or had another schema


def read_records(path: str | os.PathLike[str], kind: str | None = None) -> ReadResult:
    records, skipped = [], 0
    for line in _lines(Path(path)):
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            skipped += 1
            continue
        if not isinstance(rec, dict) or rec.get("schema") != SCHEMA:
            skipped += 1
        elif kind is None or rec.get("kind") == kind:
            records.append(rec)
    return ReadResult(records, skipped)


def _lines(path: Path) -> Iterator[str]:
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield line
