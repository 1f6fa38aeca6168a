"""Suite validation: every malformed suite gets an error naming file, field and fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from hebench.config import load_suite, parse_suite
from hebench.errors import SuiteError

ROOT = Path(__file__).resolve().parents[2]
OK = {"name": "t", "configurations": [{"mode": "raw"}]}


@pytest.mark.parametrize("name", ["quickstart", "femnist"])
def test_shipped_suites_validate(name):
    suite = load_suite(ROOT / "suites" / f"{name}.yaml")
    assert suite.name == name and len(suite.digest()) == 64


def test_femnist_suite_is_the_fednic_setup():
    s = load_suite(ROOT / "suites" / "femnist.yaml")
    assert (s.data.dataset, s.data.clients, s.data.images_per_client) == ("femnist", 2, 1600)
    assert (s.model.name, s.training.rounds, s.training.batch_size, s.training.local_steps) == (
        "cnn_dropout",
        50,
        32,
        1,
    )
    assert {c.mode for c in s.configurations} == {"raw", "host-he", "offload"}


@pytest.mark.parametrize(
    ("raw", "field", "words"),
    [
        ({"configurations": [{"mode": "raw"}]}, "name", "Field required"),
        ({**OK, "data": {"clients": "three"}}, "data.clients", "valid integer"),
        (
            {**OK, "configurations": [{"mode": "host-he", "adapter": "rot13"}]},
            "configurations.0.adapter",
            "unknown adapter",
        ),
        ({**OK, "configurations": [{"mode": "host-he"}]}, "configurations.0", "needs an HE adapter"),
        ({**OK, "data": {"dataset": "imagenet"}}, "data.dataset", "Input should be"),
        ({**OK, "data": {"clients": 2}, "training": {"clients_per_round": 3}}, "training.clients_per_round", "exceeds"),
        ({**OK, "configurations": []}, "configurations", "at least 1"),
        ({**OK, "trainning": {}}, "trainning", "unknown field"),
        ({**OK, "configurations": [{"mode": "raw"}, {"mode": "raw"}]}, "configurations.1.name", "distinct name"),
    ],
)
def test_malformed_suites(raw, field, words):
    with pytest.raises(SuiteError) as info:
        parse_suite(raw, "my.yaml")
    assert f"field '{field}'" in str(info.value) and words in str(info.value)
    assert str(info.value).startswith("my.yaml: ") and "(top level)" not in str(info.value)
    assert info.value.fix


def test_overrides_and_file_errors(tmp_path):
    s = parse_suite(dict(OK), "x", ["training.rounds=7", "configurations.0.name=base", "data.split=dirichlet"])
    assert s.training.rounds == 7 and s.configurations[0].label == "base" and s.data.split == "dirichlet"
    with pytest.raises(SuiteError, match="KEY=VALUE"):
        parse_suite(dict(OK), "x", ["rounds"])
    with pytest.raises(SuiteError, match="no list item"):
        parse_suite(dict(OK), "x", ["configurations.5.mode=raw"])
    with pytest.raises(SuiteError, match="does not exist"):
        load_suite(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: [unclosed")
    with pytest.raises(SuiteError, match="not valid YAML"):
        load_suite(bad)
