"""The terminal summary's notes and verdicts: whole entries per line, no "offload offload/", the report's
verdicts with their evidence, and none with one steady round (``--set training.rounds=2``)."""

from __future__ import annotations

import io
import re

from rich.console import Console

from hebench.analysis.load_flags import load_notes
from hebench.analysis.summary import summarize_run
from hebench.cli.render.legend import label_keys
from hebench.cli.render.lines import wrapped
from hebench.cli.render.summary import print_summary, print_verdicts, summary_notes
from hebench.results import read_records
from hebench.results.records import RunRecord
from tests.analysis.test_defended import attacked
from tests.report.rows import row
from tests.results.runs import extended_run

LOAD_NOTE = (
    "more party processes than the 2 usable cores: raw 5, host-he/tenseal-ckks 5, host-he/compact-bfv-16 5, "
    "offload/tenseal-ckks 8, host-he/tenseal-ckks/sel-sensitivity-0.1 5: wall times include waiting for a core"
)


def test_notes_wrap_between_entries_never_inside_one():
    lines = wrapped(LOAD_NOTE, 80, "note: ")
    assert all(len(line) <= 80 for line in lines)
    text = "\n".join(lines)
    for entry in ("raw 5", "host-he/tenseal-ckks 5", "offload/tenseal-ckks 8", "sel-sensitivity-0.1 5"):
        assert entry in text, (entry, text)  # the label and its count on one line
    assert all(line.startswith("      ") for line in lines[1:])  # continuation lines read as one note


def test_the_offload_note_names_the_configuration_once():
    rows = summarize_run(read_records(extended_run_path() / "results.jsonl").records)
    (note,) = [n for n in summary_notes(rows) if "twin" in n]
    assert note == "offload/tenseal-ckks (offload) is compared with its host-he twin, host-he/tenseal-ckks"


def extended_run_path(rounds: int = 3):
    import tempfile
    from pathlib import Path

    return extended_run(Path(tempfile.mkdtemp()) / "run", rounds)


def _printed(rounds: int) -> str:
    records = read_records(extended_run_path(rounds) / "results.jsonl").records
    rows = summarize_run(records)
    run = next(r for r in records if isinstance(r, RunRecord))
    attacks = [attacked("raw", 1, 2, 0.0, "raw"), attacked("host-he/tenseal-ckks", 0, 2)]
    out = io.StringIO()
    console = Console(file=out, width=80)
    keys = print_summary(console, rows, load_notes(run, rows), run=run)
    print_verdicts(console, rows, attacks, run, keys)
    return out.getvalue()


def test_one_steady_round_prints_no_verdict_and_says_what_would_decide():
    text = _printed(2)  # --set training.rounds=2: one steady round, no spread
    assert "Not enough evidence for a Pareto set" in text and "Pareto set over" not in text
    assert "clear" not in re.sub(r"is clear at 95 %|not clearly", "", text)
    assert "one round has no spread" in text
    assert all(len(line) <= 80 for line in text.splitlines()), text


def test_enough_rounds_give_verdicts_with_their_evidence():
    text = " ".join(_printed(8).split())  # as read, whatever the line breaks
    assert "Evidence: costs by Welch's 95 % interval" in text
    assert "Against iDLG" in text and "4 more images each would decide it" in text


def test_round_time_is_judged_only_when_the_run_is_known_uncontended():
    from hebench.analysis.advice import offload_lines

    rows = summarize_run(read_records(extended_run_path(8) / "results.jsonl").records)
    assert "round time" in offload_lines(rows, None)[0] and "contention is not known" in offload_lines(rows, None)[0]
    assert "not ranked: wall time under CPU contention" in offload_lines(rows, True)[0]
    assert "not ranked" not in offload_lines(rows, False)[0]


def test_verdicts_name_every_configuration_by_its_label_never_by_a_tables_key():
    # #40: lists mixed keys and names ("not defended: #2, raw/tls"); the tables keep their keys and legend
    labels = ["raw", "host-he/tenseal-ckks/a-label-too-long-for-a-table", "raw/tls"]
    rows = [row(labels[0], "raw", "plain"), row(labels[1], "host-he", "tenseal-ckks"), row(labels[2], "raw", "plain")]
    attacks = [attacked("raw", 2, 2, 0.0, "raw"), attacked(labels[1], 2, 2), attacked("raw/tls", 2, 2, 0.0, "raw")]
    out = io.StringIO()
    keys = label_keys(labels)
    assert keys[labels[1]] == "#2"  # too long for the 80-column tables: a key there, with the legend
    print_verdicts(Console(file=out, width=80), rows, attacks, None, keys)
    text = out.getvalue()
    assert "not defended:" in text and not re.search(r"#\d", text), text
    assert labels[1] in text and "raw/tls" in text
