"""Append typed records as schema-versioned JSON lines, each flushed and synced to disk as it is written.

An interrupted run keeps every line already written. When a write fails (the
disk is full), the partial line is cut off again, the file is closed, and a
:class:`ResultsWriteError` names the file and the fix; closing afterwards
(``__exit__``) never raises over that first error.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, BinaryIO

from hebench.errors import RecordError, ResultsWriteError
from hebench.results.records import SCHEMA, Record, record_class


class ResultWriter:
    """Append-only JSON-lines writer of :class:`Record` values."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fh: BinaryIO | None = self.path.open("ab")
        except OSError as err:
            raise self._error("cannot open", err) from err
        self._failed: ResultsWriteError | None = None

    def write(self, record: Record | str, fields: dict[str, Any] | None = None) -> Record:
        """Append ``record`` (stamped with the time); returns it.

        ``write(kind, dict)`` is the older form: the dict is built into the kind's
        typed record, and a misspelled or mistyped field raises :class:`RecordError`.
        """
        if isinstance(record, str):
            record = record_class(record).from_json(fields or {}, strict=True)
        if record.time is None:
            record = replace(record, time=time.time())
        try:
            line = (json.dumps({"schema": SCHEMA, **record.to_json()}, sort_keys=True) + "\n").encode()
        except (TypeError, ValueError) as err:
            raise RecordError(f"{record.kind} record cannot be written as JSON: {err}", "record plain values") from err
        self._append(line)
        return record

    def _append(self, line: bytes) -> None:
        if self._failed is not None:
            raise self._failed
        if self._fh is None:
            raise ResultsWriteError(f"{self.path} is closed", "write results inside the writer's `with` block")
        start = self._fh.tell()
        try:
            self._fh.write(line)
            self._fh.flush()
            os.fsync(self._fh.fileno())
        except OSError as err:
            self._failed = self._error("could not write to", err)
            self._abandon(start)
            raise self._failed from err

    def _abandon(self, start: int) -> None:
        """After a failed write: cut the partial line (the records before it stay whole) and close quietly."""
        fh, self._fh = self._fh, None
        if fh is None:
            return
        with contextlib.suppress(OSError):
            os.ftruncate(fh.fileno(), start)
        with contextlib.suppress(OSError):
            fh.close()  # its buffer may still hold the failed line: flushing it fails again
        with contextlib.suppress(OSError):
            if self.path.stat().st_size > start:
                os.truncate(self.path, start)

    def _error(self, what: str, err: OSError) -> ResultsWriteError:
        reason = err.strerror or str(err)
        return ResultsWriteError(
            f"{what} results file {self.path}: {reason}",
            "free disk space (or choose another --out), then rerun with --resume: the records written so far are kept",
        )

    def close(self) -> None:
        fh, self._fh = self._fh, None
        if fh is None:
            return
        try:
            fh.close()
        except OSError as err:
            raise self._error("could not close", err) from err

    def __enter__(self) -> ResultWriter:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc is None:
            self.close()
            return
        with contextlib.suppress(Exception):  # the error in flight is the one to report
            self.close()
