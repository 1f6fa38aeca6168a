"""`compare RUN_A RUN_B`: ratios with a significance check over steady rounds, metadata checked first."""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

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


FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def test_runs_on_links_compare_their_link_round_times_not_loopback_walls():
    # #40: an emulated run against its `network.emulation=model` twin said "round wall 0.152×, significant" for
    # raw on lte: the model run's loopback walls against the emulated link rounds
    result = compare_runs(FIXTURES / "run-links", FIXTURES / "run-links-model")
    for config in ("raw@home-broadband", "raw@lte", "host-he/tenseal-ckks@home-broadband"):
        wall = _metric(result, config, "round wall")
        assert 0.5 < wall.ratio < 2, (config, wall)
    lte = _metric(result, "raw@lte", "round wall")
    assert lte.a == pytest.approx(1.32, abs=0.01) and lte.b == pytest.approx(1.34, abs=0.01)  # the links table's
    (said,) = [w for w in result.warnings if "modelled on their links" in w]
    assert said.startswith("round walls of B's raw@home-broadband, raw@lte")


def test_nearly_identical_samples_are_compared_without_scipys_warnings():
    # #40: per-round means equal but for their last bit made SciPy warn of "catastrophic cancellation" twice
    a = [1325746.6666666667, 1325746.6666666665, 1325746.6666666667]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert welch(a, list(a)) == (None, "identical")
        assert welch([5.0, 5.0, 5.0], [5.0, 5.0, 5.000000000000001]) == (None, "identical")
        p, verdict = welch([1.0, 1.1, 0.9, 1.05], [2.0, 2.1, 1.9, 2.05])
    assert verdict == "significant" and p < 1e-4


def test_welchs_test_agrees_with_scipy_where_scipy_is_exact():
    from scipy import stats

    from hebench.analysis.stats import welch_test

    a, b = [0.31, 0.29, 0.35, 0.30, 0.33], [0.36, 0.41, 0.33, 0.39]
    assert welch_test(a, b) == pytest.approx(stats.ttest_ind(a, b, equal_var=False).pvalue, rel=1e-9)
    # a sample without spread: the other's alone (SciPy warns here): t = 1 / sqrt(1/3), 2 degrees of freedom
    assert welch_test([1.0, 1.0, 1.0], [1.0, 2.0, 3.0]) == pytest.approx(2 * stats.t.sf(3**0.5, 2))
    assert welch_test([1.0], [1.0, 2.0]) is None
