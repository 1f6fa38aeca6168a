"""Suite errors in users' words: "did you mean" for a mistyped key, configurations counted from 1, and the
field a check is about (never "(top level)")."""

from __future__ import annotations

import copy

import pytest

from hebench.config import parse_suite
from hebench.errors import SuiteError

BASE = {"name": "t", "data": {"clients": 3}, "configurations": [{"mode": "raw"}, {"mode": "secagg"}]}


def _problem(raw: dict | None = None, *overrides: str) -> SuiteError:
    with pytest.raises(SuiteError) as info:
        parse_suite(copy.deepcopy(raw or BASE), "s.yaml", list(overrides))
    assert "(top level)" not in str(info.value) and info.value.fix
    return info.value


@pytest.mark.parametrize(
    ("raw", "overrides", "field", "meant"),
    [
        ({**BASE, "trainig": {"rounds": 2}}, (), "trainig", "training"),
        (BASE, ("trainig.rounds=2",), "trainig", "training"),
        ({**BASE, "training": {"roudns": 2}}, (), "training.roudns", "rounds"),
        ({**BASE, "configurations": [{"mode": "raw"}, {"mode": "host-he", "adaptr": "x"}]}, (), "", "adapter"),
        ({**BASE, "privacy": {"threats": [{"adversry": "observer"}]}}, (), "privacy.threats.0.adversry", "adversary"),
    ],
)
def test_a_mistyped_key_gets_the_field_it_meant(raw, overrides, field, meant):
    err = _problem(raw, *overrides)
    assert f"did you mean '{meant}'?" in err.problem and field in err.problem
    assert meant in err.fix


def test_an_unknown_key_with_no_close_field_lists_the_blocks_fields():
    err = _problem({**BASE, "training": {"zzz": 1}})
    assert "unknown field 'zzz'" in err.problem and "did you mean" not in err.problem
    assert "rounds" in err.fix and "batch_size" in err.fix


def test_a_configuration_is_counted_from_one_beside_its_path():
    err = _problem({**BASE, "configurations": [{"mode": "raw"}, {"mode": "host-he", "adapter": "rot13"}]})
    assert err.problem.startswith("s.yaml: configuration 2, field 'configurations.1.adapter'")


def test_a_suite_check_names_the_configuration_as_users_count():
    raw = {**BASE, "faults": {"dropout": 0.1}, "configurations": [{"mode": "raw"}, {"mode": "decryptor-he"}]}
    raw["configurations"][1]["adapter"] = "tenseal-ckks"
    err = _problem(raw)
    assert "configuration 2 (configurations.1, decryptor-he/tenseal-ckks)" in err.problem


def test_set_into_a_missing_configuration_says_which_indices_name_which_configuration():
    err = _problem(BASE, "configurations.5.mode=raw")
    assert "no list item '5' (it holds 2)" in err.problem
    assert "0 (configuration 1) to 1 (configuration 2)" in err.fix


@pytest.mark.parametrize(
    ("threat", "field"),
    [
        ({"adversary": "colluding-clients", "k": 5}, "privacy.threats.0.k"),  # more colluders than a round has
        ({"adversary": "aggregator", "k": 2}, "privacy.threats.0.k"),  # k for an adversary without colluders
        ({"adversary": "malicious-aggregator"}, "privacy.threats.0.strategy"),
        ({"adversary": "share-holders", "k": 1}, "privacy.threats.0.adversary"),  # no configuration defines it
    ],
)
def test_a_bad_threat_names_its_own_key(threat, field):
    err = _problem({**BASE, "privacy": {"threats": [threat]}})
    assert f"field '{field}'" in err.problem


@pytest.mark.parametrize(
    ("override", "field"),
    [
        ("training.clients_per_round=4", "training.clients_per_round"),
        ("training.min_clients=4", "training.min_clients"),
        ("measure.warmup_rounds=3", "measure.warmup_rounds"),
        ("configurations.1.mode=raw", "configurations.1.name"),  # two configurations labelled raw
    ],
)
def test_checks_across_blocks_name_the_field_they_are_about(override, field):
    assert f"field '{field}'" in _problem(BASE, override).problem
