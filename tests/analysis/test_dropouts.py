"""Clients that dropped out are counted apart: per-client costs are over the clients that uploaded (#40).

The fixture is a real run (tests/fixtures/run-dropouts: 8 clients, 6 selected per round, 3 rounds; raw at 0 and
30 % dropout, CKKS and SecAgg+ at 30 %; the same clients fail at the same points in every configuration)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hebench.analysis.dropouts import dropout_notes, dropout_rows
from hebench.analysis.summary import summarize_run
from hebench.results import read_records

RUN = Path(__file__).resolve().parents[1] / "fixtures" / "run-dropouts"


@pytest.fixture(scope="module")
def records():
    return read_records(RUN / "results.jsonl").records


def test_a_dropped_client_is_no_small_upload(records):
    # before: raw@30 averaged 42 kB per client with a 134-byte "upload" from each client that left after training,
    # and CKKS fell from 1.33 MB to 1.08 MB
    rows = {r.config: r for r in summarize_run(records)}
    raw, dropped, ckks = rows["raw@0"], rows["raw@30"], rows["ckks@30"]
    assert dropped.upload_bytes_per_client_round == raw.upload_bytes_per_client_round == 51249
    assert dropped.upload_bytes_spread == (51249, 51249) and dropped.bytes_overhead_vs_raw == 1.0
    assert ckks.upload_bytes_spread[0] > 1_300_000
    assert round(ckks.bytes_overhead_vs_raw, 1) == 25.9


def test_dropouts_are_counted_apart_over_the_steady_rounds(records):
    rows = {r.config: r for r in summarize_run(records)}
    assert (rows["raw@0"].selected_clients, rows["raw@0"].dropped_clients) == (12, 0)
    assert [(rows[c].selected_clients, rows[c].dropped_clients) for c in ("raw@30", "ckks@30", "secagg@30")] == [
        (12, 3)
    ] * 3
    (note,) = dropout_notes(list(rows.values()))
    assert "raw@30 3 of 12, ckks@30 3 of 12, secagg@30 3 of 12" in note and "raw@0" not in note
    assert "per-client figures are over the clients that uploaded" in note


def test_the_dropouts_section_counts_every_round_from_the_aggregators_view(records):
    rows = {r.config: r for r in dropout_rows(records)}
    assert (rows["raw@30"].selected, rows["raw@30"].dropped) == (18, 5)  # 2 + 1 + 2 over the 3 rounds
    assert rows["raw@30"].dropped_share == pytest.approx(5 / 18)
    assert rows["raw@0"].dropped == 0 and [a[0] for a in rows["raw@0"].accuracy] == [0, 1, 2]
