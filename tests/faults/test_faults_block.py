"""The faults: block: validation with one-line fixes, inheritance like network:, and the pure fault draw."""

from __future__ import annotations

import copy

import pytest

from hebench.config import parse_suite
from hebench.errors import SuiteError
from hebench.faults import FaultsSpec, StragglerSpec, fault_for, faults_of_round

BASE = {
    "name": "f",
    "data": {"dataset": "digits", "clients": 20},
    "training": {"clients_per_round": 10},
    "configurations": [{"mode": "raw"}, {"mode": "host-he", "adapter": "tenseal-ckks"}],
}


def _suite(*overrides: str, raw: dict | None = None):
    return parse_suite(copy.deepcopy(raw or BASE), "s.yaml", list(overrides))


@pytest.mark.parametrize(
    ("override", "field", "fix"),
    [
        ("faults.dropout=1.0", "faults.dropout", "[0, 1)"),
        ("faults.dropout=-0.1", "faults.dropout", "[0, 1)"),
        ("faults.stragglers.share=1", "faults.stragglers.share", "[0, 1)"),
        ("faults.stragglers.slowdown=0.5", "faults.stragglers.slowdown", "at least 1"),
        ("faults.dropout_phase=during_train", "faults.dropout_phase", "before_train"),
        ("training.round_deadline_s=0", "training.round_deadline_s", "positive seconds"),
        ("training.min_clients=11", "training.min_clients", "lower min_clients"),
        ("training.overselect=0.5", "training.overselect", "at least 1"),
    ],
)
def test_bad_fault_settings_fail_in_one_line_naming_field_and_fix(override, field, fix):
    with pytest.raises(SuiteError) as err:
        _suite(override)
    message = str(err.value.problem)
    assert f"field '{field}'" in message and fix in message and "\n" not in message


def test_min_clients_counts_the_overselected_clients():
    suite = _suite("training.min_clients=12", "training.overselect=1.3")
    assert suite.training.selected_count(20) == 13


def test_a_mode_without_survivor_rounds_is_refused_with_faults_and_told_how():
    raw = {**BASE, "configurations": [{"mode": "raw"}, {"mode": "decryptor-he", "adapter": "tenseal-ckks"}]}
    named = r"configuration 2 \(configurations.1, decryptor-he/tenseal-ckks\).*faults: \{dropout: 0"
    with pytest.raises(SuiteError, match=named):
        _suite("faults.dropout=0.1", raw=raw)
    assert _suite("faults.dropout=0.1", "configurations.1.faults={dropout: 0}", raw=raw)


def test_configuration_keys_override_the_suites_and_set_reaches_both():
    suite = _suite("faults.dropout=0.3", "faults.seed=7", "configurations.1.faults={dropout_phase: after_train}")
    first, second = (suite.faults_for(c) for c in suite.configurations)
    assert first == FaultsSpec(dropout=0.3, dropout_phase="random", stragglers=StragglerSpec(), seed=7)
    assert second is not None and second.dropout == 0.3 and second.dropout_phase == "after_train"
    assert second.seed == 7
    assert _suite().faults_for(suite.configurations[0]) is None  # no faults block: none
    assert _suite("faults.dropout=0").faults_for(suite.configurations[0]) is None  # nothing can happen: none


def test_the_fault_seed_defaults_to_the_suites_seed():
    suite = _suite("faults.dropout=0.2", "seed=5")
    spec = suite.faults_for(suite.configurations[0])
    assert spec is not None and spec.seed == 5


SPEC = FaultsSpec(dropout=0.3, stragglers=StragglerSpec(share=0.2, slowdown=4)).resolved(11)


def test_the_draw_is_a_pure_function_of_seed_round_and_client():
    once = [fault_for(SPEC, r, c) for r in range(5) for c in range(20)]
    again = [fault_for(SPEC, r, c) for r in range(5) for c in reversed(range(20))]
    assert once == [again[r * 20 + (19 - c)] for r in range(5) for c in range(20)]  # order does not matter
    other = FaultsSpec(dropout=0.3, stragglers=StragglerSpec(share=0.2, slowdown=4)).resolved(12)
    assert once != [fault_for(other, r, c) for r in range(5) for c in range(20)]  # the seed does


def test_the_draw_follows_the_rates_and_phases():
    drawn = [fault_for(SPEC, r, c) for r in range(200) for c in range(20)]
    dropped = [f for f in drawn if f.drops]
    assert 0.27 < len(dropped) / len(drawn) < 0.33
    assert {f.dropout_phase for f in dropped} == {"before_train", "after_train", "after_upload"}
    assert 0.17 < sum(f.slowdown == 4 for f in drawn) / len(drawn) < 0.23
    fixed = FaultsSpec(dropout=0.3, dropout_phase="after_train").resolved(11)
    assert {fault_for(fixed, r, c).dropout_phase for r in range(50) for c in range(20)} == {None, "after_train"}
    # the same clients drop whatever the phase asked for: the phase draw is separate from the leave draw
    assert [fault_for(fixed, r, 3).drops for r in range(50)] == [fault_for(SPEC, r, 3).drops for r in range(50)]


def test_faults_of_round_lists_only_the_clients_with_a_fault():
    found = faults_of_round(SPEC, 2, list(range(20)))
    assert found and all(f.drops or f.slowdown != 1 for f in found.values())


def test_an_unresolved_spec_is_refused():
    with pytest.raises(ValueError, match="resolved"):
        fault_for(FaultsSpec(dropout=0.1), 0, 0)


def test_flower_refuses_only_a_deadline_it_cannot_count_the_links_of():
    from hebench.runtime.flower.runner import refuse_unfit_faults

    refuse_unfit_faults(_suite("faults.dropout=0.1", "training.round_deadline_s=30"))  # Flower applies faults
    with pytest.raises(SuiteError, match="counts a node's compute only") as err:
        refuse_unfit_faults(_suite("training.round_deadline_s=30", "network.clients.profile=lte"))
    assert "local runtime" in err.value.fix


@pytest.mark.parametrize("mode", ["raw", "host-he", "secagg", "secret-sharing", "decryptor-he"])  # all survive a kill
def test_clients_keep_the_global_model_wherever_a_round_can_end_without_an_aggregate(mode):
    """A client lost mid-upload makes a loss-tolerant mode skip the round even with no faults block: every other
    client must then still hold the round's global model (it used to hold one only with faults or a deadline)."""
    raw = copy.deepcopy(BASE)
    raw.pop("faults", None)
    he = mode in ("host-he", "decryptor-he")
    raw["configurations"] = [{"mode": mode, **({"adapter": "tenseal-ckks"} if he else {})}]
    suite = parse_suite(raw, "s.yaml")
    assert suite.rounds_may_skip(suite.configurations[0])
