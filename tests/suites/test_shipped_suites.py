"""The shipped suites: the main command shows every mode and an attack; the FEMNIST sample suite is FedNIC's."""

from __future__ import annotations

from pathlib import Path

import pytest

from hebench.config import load_suite
from hebench.inversion.campaign import plans_for, view_of

SUITES = Path(__file__).resolve().parents[2] / "suites"


@pytest.mark.parametrize(
    "name", ["quickstart", "femnist", "femnist-sample", "protections", "scale", "bigmodels", "dropouts"]
)
def test_shipped_suite_validates(name):
    suite = load_suite(SUITES / f"{name}.yaml")
    assert suite.name == name and len(suite.digest()) == 64


def test_quickstart_shows_every_mode_and_selective():
    suite = load_suite(SUITES / "quickstart.yaml")
    modes = {c.mode for c in suite.configurations}
    assert modes == {"raw", "host-he", "offload"}
    assert any(c.selective is not None for c in suite.configurations)
    adapters = {c.adapter for c in suite.configurations if c.mode == "host-he" and c.selective is None}
    assert {"tenseal-ckks", "seal-bfv"} <= adapters


def test_quickstart_attacks_what_each_configuration_sent():
    suite = load_suite(SUITES / "quickstart.yaml")
    assert suite.privacy is not None and suite.privacy.against_configurations
    plans = plans_for(suite, dry_run=True)
    assert {p.label for p in plans} == {c.label for c in suite.configurations}
    assert {view_of(c)[0] for c in suite.configurations} == {"raw", "he", "selective"}


def test_femnist_sample_suite_is_fednic_on_the_shipped_writers():
    suite = load_suite(SUITES / "femnist-sample.yaml")
    assert (suite.data.dataset, suite.data.clients, suite.data.sample) == ("femnist", "all", True)
    assert suite.training.clients_per_round == 2 and suite.model.name == "cnn_dropout"
    assert {c.mode for c in suite.configurations} == {"raw", "host-he", "offload"}
    assert {c.adapter for c in suite.configurations if c.mode == "offload"} == {"tenseal-ckks", "seal-bfv"}


def test_femnist_suite_runs_offline_on_the_sample():
    suite = load_suite(SUITES / "femnist.yaml", ["data.sample=true"])
    assert suite.data.sample and suite.data.path is None


def test_protections_suite_puts_every_protection_beside_raw_and_attacks_each_measured_one():
    suite = load_suite(SUITES / "protections.yaml")
    assert {c.mode for c in suite.configurations} == {"raw", "host-he", "offload", "secagg", "secret-sharing"}
    assert len({c.dp.noise_multiplier for c in suite.configurations if c.dp}) == 2
    assert any(c.transport == "tls" for c in suite.configurations)
    assert any(c.selective for c in suite.configurations)
    modelled = {c.label for c in suite.configurations if c.tee is not None}
    plans = {p.label: p for p in plans_for(suite, dry_run=True)}
    assert modelled and set(plans) == {c.label for c in suite.configurations} - modelled  # a modelled row: no attack
    assert plans["secagg"].clients == suite.data.clients  # SecAgg's aggregator sees only the sum of every client
    assert plans["raw/dp-client-z0.1-c1"].dp is not None  # the noisy update is what gets attacked


def test_scale_suite_samples_100_of_1000_clients_each_holding_data():
    from hebench.data.registry import load_federated

    suite = load_suite(SUITES / "scale.yaml")
    assert (suite.data.clients, suite.training.clients_per_round) == (1000, 100)
    assert {c.adapter for c in suite.configurations} == {"plain", "tenseal-ckks", "seal-bfv"}
    assert all(len(c) >= 1 for c in load_federated(suite.data, suite.seed).clients)
