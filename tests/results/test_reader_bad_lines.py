"""A results file with lines no hebench wrote (nested past any record, numbers past any counter, wrong types)
is read without them: each such line is skipped and counted with its reason, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hebench.errors import ParameterError
from hebench.results import read_records
from hebench.results.reader import MAX_DEPTH, read_hebench_records
from hebench.results.records import RoundRecord

RUN = Path(__file__).resolve().parents[1] / "fixtures" / "run-offload" / "results.jsonl"
ROUND = next(json.loads(line) for line in RUN.read_text().splitlines() if '"kind": "round"' in line)

BAD_LINES = {
    "nested past the JSON parser": ("[" * 100_000 + "]" * 100_000, "nests deeper"),
    "nested inside a record": (json.dumps({**ROUND, "note": json.loads("[" * 200 + "]" * 200)}), "nests deeper"),
    "a round of 10^400": (json.dumps({**ROUND, "round": 10**400}), "round.round is out of range (401 digits)"),
    "a float field of 10^400": (json.dumps({**ROUND, "accuracy": 10**400}), "round.accuracy is out of range"),
    "a round as text": (json.dumps({**ROUND, "round": "two"}), "round.round should be int, got str"),
}


def _with(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "results.jsonl"
    path.write_text(RUN.read_text() + "".join(f"{line}\n" for line in lines))
    return path


@pytest.mark.parametrize("case", list(BAD_LINES))
def test_a_bad_line_is_skipped_and_counted_with_its_reason(tmp_path, case):
    line, why = BAD_LINES[case]
    good = read_records(RUN)
    result = read_records(_with(tmp_path, line))
    assert len(result.records) == len(good.records) and result.skipped == 1
    first = len(RUN.read_text().splitlines()) + 1
    assert len(result.problems) == 1 and why in result.problems[0] and f"first at line {first}" in result.problems[0]
    note = result.skipped_note("F")
    assert note is not None and note.startswith("1 line(s) of F skipped") and why in note


def test_every_bad_line_counts_and_the_reasons_are_listed_once_each(tmp_path):
    result = read_records(_with(tmp_path, *(line for line, _ in BAD_LINES.values()), BAD_LINES["a round as text"][0]))
    assert result.skipped == len(BAD_LINES) + 1
    assert len(result.problems) == 4  # nested (twice), out of range (int, float), mistyped (twice)
    assert any("(2 line(s)" in p and "should be int" in p for p in result.problems)
    assert read_records(RUN).skipped_note("F") is None


def test_the_deepest_line_hebench_writes_is_well_within_the_limit():
    def depth(value: object) -> int:
        children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
        return 1 + max((depth(v) for v in children), default=0)

    fixtures = Path(__file__).resolve().parents[1] / "fixtures"
    deepest = max(depth(json.loads(line)) for f in fixtures.glob("*/results.jsonl") for line in f.open())
    assert deepest < MAX_DEPTH / 4


def test_records_of_the_right_types_and_sizes_still_read(tmp_path):
    line = json.dumps({**ROUND, "round": 2**62, "accuracy": 1e308})
    result = read_records(_with(tmp_path, line), kind=RoundRecord)
    assert result.skipped == 0 and result.of(RoundRecord)[-1].round == 2**62


def test_a_file_of_only_bad_lines_is_refused_with_the_first_reason(tmp_path):
    path = tmp_path / "results.jsonl"
    path.write_text(BAD_LINES["nested past the JSON parser"][0] + "\n")
    with pytest.raises(ParameterError, match=r"holds no hebench records .*nests deeper"):
        read_hebench_records(path)
