"""Warm-up rounds are recorded but kept out of headline figures; spreads and per-round values exposed."""

from __future__ import annotations

import pytest

from hebench.analysis.summary import summarize_run
from hebench.config import parse_suite
from hebench.results import read_records
from tests.results.runs import extended_run


def _rows(folder):
    return {r.config: r for r in summarize_run(read_records(folder / "results.jsonl").records)}


def test_the_first_round_is_left_out_of_means_and_ratios_by_default(tmp_path):
    rows = _rows(extended_run(tmp_path / "r", 3))
    raw = rows["raw"]
    assert raw.warmup_rounds == 1 and raw.steady_rounds == 2 and not raw.includes_warmup
    assert len(raw.client_cpu_s_rounds) == 2
    assert raw.client_cpu_s_per_round == pytest.approx(sum(raw.client_cpu_s_rounds) / 2)
    lo, hi = raw.client_cpu_s_spread
    assert lo <= raw.client_cpu_s_per_round <= hi
    # the fixture's round 0 trained for a cold second: it would dominate a mean over every round
    assert raw.client_cpu_s_per_round < 0.1


def test_warmup_rounds_zero_keeps_every_round(tmp_path):
    rows = _rows(extended_run(tmp_path / "r", 3, measure__warmup_rounds=0))
    assert rows["raw"].warmup_rounds == 0 and rows["raw"].steady_rounds == 3 and rows["raw"].includes_warmup
    assert rows["raw"].client_cpu_s_per_round > 0.1


def test_a_suite_whose_warmup_leaves_no_steady_round_is_refused():
    with pytest.raises(Exception, match="warmup_rounds"):
        parse_suite({"name": "x", "training": {"rounds": 2}, "measure": {"warmup_rounds": 2}, "configurations": [{}]})


def test_labels_tell_apart_params_and_packing():
    suite = parse_suite(
        {
            "name": "x",
            "configurations": [
                {"mode": "host-he", "adapter": "paillier", "params": {"key_bits": 2048}},
                {"mode": "host-he", "adapter": "paillier", "params": {"key_bits": 3072}},
                {"mode": "host-he", "adapter": "tenseal-ckks"},
                {"mode": "host-he", "adapter": "tenseal-ckks", "packing": "per-layer"},
            ],
        }
    )
    labels = [c.label for c in suite.configurations]
    assert len(set(labels)) == 4 and "host-he/paillier[key_bits=2048]" in labels


def test_two_identical_configurations_are_refused_with_the_fix():
    with pytest.raises(Exception, match="distinct name"):
        parse_suite({"name": "x", "configurations": [{"mode": "raw"}, {"mode": "raw"}]})
