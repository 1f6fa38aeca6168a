from __future__ import annotations

import json

import pytest

from hebench.measure.environment import capture
from hebench.measure.sample import summarize
from hebench.measure.timing import measure
from hebench.results import SCHEMA, ResultWriter, read_records
from hebench.results.records import RoundRecord


def test_summarize_known_values():
    s = summarize([1.0, 2.0, 3.0, 4.0, 100.0])
    assert s.median == 3.0 and s.min == 1.0 and s.max == 100.0 and s.n == 5
    assert s.unstable
    assert not summarize([1.0, 1.01, 0.99, 1.0]).unstable


def test_measure_counts_calls():
    calls = []
    m = measure(lambda: calls.append(1), repeats=3, min_time=0.001, budget_s=1.0)
    assert m.wall.n == 3 and len(calls) >= 3 * m.loops + 1


def test_environment_records_cycle_source_honestly():
    env = capture()
    assert env["cycles"]["available"] == (env["cycles"]["reason"] == "")
    assert env["logical_cores"] >= 1 and env["python"]


def test_writer_appends_and_reader_skips_damaged_lines(tmp_path):
    path = tmp_path / "r.jsonl"
    with ResultWriter(path) as w:
        w.write("round", {"config": "raw", "round": 0, "accuracy": 0.5})
    with ResultWriter(path) as w:
        w.write(RoundRecord(config="raw", round=1, accuracy=0.75))
    with path.open("a") as fh:
        fh.write('{"schema": "' + SCHEMA + '", "kind": "round", "config": ')  # interrupted write
    result = read_records(path)
    assert [r.round for r in result.of(RoundRecord)] == [0, 1] and result.skipped == 1
    assert "not JSON" in result.problems[0]
    assert read_records(path, kind="round").of(RoundRecord)[1].accuracy == 0.75
    assert json.loads(path.read_text().splitlines()[0])["schema"] == SCHEMA


def test_summarize_refuses_empty():
    with pytest.raises(ValueError):
        summarize([])
