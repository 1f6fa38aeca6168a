"""`hebench run --check`'s rough estimate: the probes' figures scaled as its docstring says (probes replaced by
fixed figures here, so the arithmetic is checked, not this machine's speed)."""

from __future__ import annotations

import math

import pytest

from hebench.config import parse_suite
from hebench.errors import ParameterError
from hebench.runtime import estimate
from hebench.runtime.estimate import AdapterCost, estimate_suite

SUITE = {
    "name": "e",
    "data": {"dataset": "digits", "clients": 3},
    "model": {"name": "mlp", "hidden": 4},
    "training": {"rounds": 4, "local_steps": 5},
    "configurations": [
        {"mode": "raw"},
        {"mode": "host-he", "adapter": "tenseal-ckks"},
        {"mode": "host-he", "adapter": "tenseal-ckks", "selective": {"mask": "random", "ratio": 0.5}},
    ],
}
COST = AdapterCost(
    keygen_s=2.0, slots=1000, encrypt_s=0.1, serialize_s=0.01, deserialize_s=0.01, add_s=0.001, decrypt_s=0.1,
    bytes_per_value=10.0,
)  # fmt: skip


@pytest.fixture
def probes(monkeypatch):
    monkeypatch.setattr(estimate, "_training_step_s", lambda suite, data: 0.02)
    monkeypatch.setattr(estimate, "_party_start_s", lambda: 3.0)
    monkeypatch.setattr(estimate, "_adapter_cost", lambda config, parameters: COST)
    monkeypatch.setattr(estimate.os, "sched_getaffinity", lambda pid: {0, 1})


def test_each_configuration_is_its_start_plus_rounds_of_training_encryption_and_links(probes):
    result = estimate_suite(parse_suite(SUITE))
    raw, he, selective = result.configurations
    assert result.parameters == 28 * 28 * 4 + 4 + 4 * 10 + 10  # mlp, hidden 4, on digits upsampled to 28x28
    assert result.cores == 2 and result.clients_per_round == 3
    assert raw.train_s == pytest.approx(0.02 * 5 * math.ceil(3 / 2))
    processes = 3 + 2  # clients, aggregator, key authority
    assert raw.start_s == pytest.approx(3.0 * math.ceil(processes / 2) + COST.keygen_s)
    texts = math.ceil(result.parameters / COST.slots)
    client = (0.1 + 0.01 + 0.01 + 0.1) * texts * math.ceil(3 / 2)
    aggregator = ((0.01 + 0.001) * 3 + 0.01) * texts
    assert he.crypto_s == pytest.approx(client + aggregator)
    assert selective.crypto_s <= he.crypto_s  # half the values: no more ciphertexts
    for row in result.configurations:
        assert row.links_s == 0  # loopback
        assert row.total_s == pytest.approx(row.start_s + 4 * (row.train_s + row.crypto_s + row.links_s))
    assert result.total_s == pytest.approx(sum(r.total_s for r in result.configurations))
    assert result.attack_restarts == 0 and "rough" in result.how


def test_shaped_links_add_their_transfer_times_and_modelled_links_add_none(probes):
    link = {"clients": {"uplink_mbit": 1, "downlink_mbit": 2, "delay_ms": 50}}
    shaped = estimate_suite(parse_suite({**SUITE, "network": link}))
    modelled = estimate_suite(parse_suite({**SUITE, "network": {**link, "emulation": "model"}}))
    he = shaped.configurations[1]
    update = shaped.parameters * COST.bytes_per_value
    assert he.links_s == pytest.approx(update * 8 / 1e6 + update * 8 / 2e6 + 4 * 0.05)
    assert all(r.links_s == 0 for r in modelled.configurations)


def test_the_attacks_are_counted_not_timed(probes):
    suite = parse_suite({**SUITE, "privacy": {"images": 3, "seeds": 2, "restarts": 4, "steps": 50}})
    result = estimate_suite(suite)
    assert (result.attack_restarts, result.attack_steps) == (3 * 2 * 4, 50)


def test_a_model_this_machine_cannot_hold_is_refused_before_any_probe(monkeypatch):
    monkeypatch.setattr(estimate, "_training_step_s", lambda suite, data: pytest.fail("probed a model that cannot fit"))
    with pytest.raises(ParameterError, match="parameters: its weights and gradients alone take"):
        estimate_suite(parse_suite(SUITE, overrides=["model.hidden=100000000000"]))
