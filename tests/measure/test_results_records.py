"""Typed records: written, read back, migrated from hebench.results/1, and loud about wrong fields."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest

from hebench.errors import RecordError, ResultsWriteError
from hebench.results import SCHEMA, ResultWriter, read_records
from hebench.results.records import (
    ConfigurationRecord,
    PartyRoundRecord,
    Phase,
    Phases,
    RoundRecord,
    kinds,
    record_class,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
V1_FILES = sorted(p for p in FIXTURES.glob("*/*.jsonl") if '"hebench.results/1"' in p.read_text())


def test_every_v1_fixture_line_migrates_to_a_typed_record():
    for path in V1_FILES:
        result = read_records(path)
        lines = [line for line in path.read_text().splitlines() if line.strip()]
        assert result.skipped == 0 and len(result.records) == len(lines), (path, result.problems)
        assert result.migrated[1] == len(lines)


def test_v1_configuration_gains_its_runtime_and_phases_their_cycles():
    result = read_records(FIXTURES / "run-offload" / "results.jsonl")
    config = result.of(ConfigurationRecord)[0]
    assert config.runtime == "hebench" and config.selective is None
    client = next(r for r in result.of(PartyRoundRecord) if r.role == "client" and r.engine is not None)
    assert isinstance(client.phases["train"], Phase) and client.engine.phases.cpu_s() > 0


def test_records_round_trip_through_the_writer(tmp_path):
    for path in V1_FILES:
        records = read_records(path).records
        out = tmp_path / f"{path.parent.name}.jsonl"
        with ResultWriter(out) as w:
            for rec in records:
                w.write(rec)
        again = read_records(out)
        assert again.records == records and not again.migrated
        assert {json.loads(line)["schema"] for line in out.read_text().splitlines()} == {SCHEMA}


def test_writing_a_misspelled_field_names_kind_and_field(tmp_path):
    with ResultWriter(tmp_path / "r.jsonl") as w, pytest.raises(RecordError, match="round has no field 'acuracy'"):
        w.write("round", {"config": "raw", "round": 0, "acuracy": 0.5})


def test_writing_a_mistyped_or_missing_field_fails(tmp_path):
    with ResultWriter(tmp_path / "r.jsonl") as w:
        with pytest.raises(RecordError, match=r"round\.round should be int"):
            w.write("round", {"config": "raw", "round": "0"})
        with pytest.raises(RecordError, match="lacks the field 'config'"):
            w.write("round", {"round": 0})
        with pytest.raises(RecordError, match="unknown record kind 'rounds'"):
            w.write("rounds", {})
        with pytest.raises(RecordError, match="cannot be written as JSON"):
            w.write("environment", {"environment": {"x": object()}, "command": "c"})


def test_reading_keeps_unknown_keys_in_extra(tmp_path):
    path = tmp_path / "r.jsonl"
    line = {"schema": SCHEMA, "kind": "round", "config": "raw", "round": 0, "gpu_s": 1.5}
    path.write_text(json.dumps(line) + "\n")
    (rec,) = read_records(path).records
    assert rec.extra == {"gpu_s": 1.5} and rec.to_json()["gpu_s"] == 1.5


def test_newer_schema_and_foreign_lines_are_skipped_with_a_reason(tmp_path):
    path = tmp_path / "r.jsonl"
    lines = [
        {"schema": "hebench.results/99", "kind": "round", "config": "raw", "round": 0},
        {"schema": "other/1", "kind": "round"},
        {"schema": SCHEMA, "kind": "round", "round": 0},  # no config
    ]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    result = read_records(path)
    assert result.records == [] and result.skipped == 3
    text = " ".join(result.problems)
    assert "newer hebench" in text and "not a hebench results line" in text and "lacks the field 'config'" in text


def test_phases_sum_cpu_leaving_out_waits():
    phases = Phases({"train": Phase(wall_s=2.0, cpu_s=1.5), "wait": Phase(wall_s=3.0, cpu_s=0.25)})
    assert phases.cpu_s(exclude=("wait",)) == 1.5 and phases.wall_s("wait") == 3.0 and "train" in phases


def test_every_kind_is_registered_once():
    assert len(set(kinds())) == len(kinds()) and record_class("party_round") is PartyRoundRecord
    assert RoundRecord(config="a", round=0).to_json() == {"kind": "round", "config": "a", "round": 0}


def _full_disk(monkeypatch, after: int) -> None:
    """os.fsync fails with ENOSPC from its ``after``-th call on."""
    calls = {"n": 0}
    real = os.fsync

    def fsync(fd: int) -> None:
        calls["n"] += 1
        if calls["n"] > after:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)


def test_disk_full_raises_one_typed_error_and_keeps_earlier_records(tmp_path, monkeypatch):
    path = tmp_path / "results.jsonl"
    _full_disk(monkeypatch, after=2)
    with pytest.raises(ResultsWriteError) as caught, ResultWriter(path) as w:
        for r in range(5):
            w.write(RoundRecord(config="raw", round=r))
    assert str(path) in str(caught.value) and "No space left" in str(caught.value)
    assert "free disk space" in caught.value.fix and "--resume" in caught.value.fix
    result = read_records(path)
    assert [r.round for r in result.of(RoundRecord)] == [0, 1] and result.skipped == 0


def test_disk_full_on_close_is_a_typed_error(tmp_path, monkeypatch):
    w = ResultWriter(tmp_path / "results.jsonl")
    w.write(RoundRecord(config="raw", round=0))

    class Full:
        def close(self) -> None:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    w._fh = Full()  # type: ignore[assignment]
    with pytest.raises(ResultsWriteError, match="could not close"):
        w.__exit__(None, None, None)


class _FullDiskFile:
    """A results file on a full disk: buffered writes succeed, flushing and closing fail with ENOSPC."""

    def __init__(self, real) -> None:
        self.real = real

    def tell(self) -> int:
        return self.real.tell()

    def fileno(self) -> int:
        return self.real.fileno()

    def write(self, data) -> int:
        return len(data)

    def flush(self) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def close(self) -> None:
        self.real.close()
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))  # a buffered file flushes again on close


def test_disk_full_while_flushing_is_not_hidden_by_close(tmp_path):
    path = tmp_path / "results.jsonl"
    with pytest.raises(ResultsWriteError) as caught, ResultWriter(path) as w:
        w.write("round", {"config": "raw", "round": 0})
        w._fh = _FullDiskFile(w._fh)  # type: ignore[assignment]
        w.write("round", {"config": "raw", "round": 1})
    assert "could not write" in str(caught.value) and str(path) in str(caught.value)
    assert [r.round for r in read_records(path).of(RoundRecord)] == [0]
