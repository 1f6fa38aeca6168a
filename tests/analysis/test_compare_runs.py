"""`compare RUN_A RUN_B`: ratios with a significance check over steady rounds, metadata checked first."""

from __future__ import annotations

import shutil

import pytest

from hebench.analysis.compare_runs import compare_runs, welch
from hebench.errors import ParameterError
from tests.results.runs import extended_run


def _metric(result, config, name):
    conf = next(c for c in result.configs if c.config == config)
    return next(m for m in conf.metrics if m.metric == name)


def test_a_copy_of_a_run_differs_nowhere_and_is_named_a_copy(tmp_path):
    a = extended_run(tmp_path / "a", 8)
    result = compare_runs(a, shutil.copytree(a, tmp_path / "copy"))
    verdicts = {m.verdict for c in result.configs for m in c.metrics}
    assert verdicts <= {"not significant", "identical"}
    assert all(m.ratio == 1.0 for c in result.configs for m in c.metrics)
    assert not any("suites differ" in w for w in result.warnings)
    assert any("identical records" in w for w in result.warnings)


def test_a_run_folder_is_not_compared_with_itself(tmp_path):
    a = extended_run(tmp_path / "a", 4)
    with pytest.raises(ParameterError, match="same run"):
        compare_runs(a, a / "results.jsonl")


def test_contention_in_both_runs_is_one_warning(tmp_path):
    a, b = extended_run(tmp_path / "a", 4), extended_run(tmp_path / "b", 4, model__hidden=99)
    busy = [w for w in compare_runs(a, b).warnings if "waiting for a core" in w]
    assert busy == [
        "wall times include waiting for a core in A and B (load up to 2.8 and up to 6 party processes on 2 cores): "
        "compare CPU times, or rerun on a quieter machine"
    ]


def test_a_threefold_cpu_cost_is_significant_and_the_untouched_configuration_is_not(tmp_path):
    a = extended_run(tmp_path / "a", 8)
    b = extended_run(tmp_path / "b", 8, cpu_factor={"host-he/tenseal-ckks": 3.0})
    result = compare_runs(a, b)
    he = _metric(result, "host-he/tenseal-ckks", "client CPU/round")
    assert he.significant and abs(he.ratio - 3.0) < 1e-9 and he.p_value < 0.05
    raw = _metric(result, "raw", "client CPU/round")
    assert raw.verdict == "not significant"


def test_differing_suites_and_missing_configurations_are_said_first(tmp_path):
    a = extended_run(tmp_path / "a", 4)
    b = extended_run(tmp_path / "b", 4, model__hidden=99)
    result = compare_runs(a, b)
    assert any("suites differ" in w and "model.hidden" in w for w in result.warnings)


def test_welch_needs_two_rounds_a_side_and_treats_constant_samples_exactly():
    assert welch([1.0], [2.0, 3.0]) == (None, "too few rounds")
    assert welch([5.0, 5.0], [5.0, 5.0])[1] == "identical"
    assert welch([5.0, 5.0], [6.0, 6.0])[1] == "significant"
    assert welch([1.0, 2.0, 3.0], [1.1, 2.1, 2.9])[1] == "not significant"
