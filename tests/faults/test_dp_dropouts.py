"""DP's accounting counts only the rounds a client took part in: a client that trained but left before sending
(``after_train``) has released nothing, so neither its ε nor its privacy ledger counts that round, and it
continues from the global model. Fault seed 1 drops client 1 in round 1 and client 2 in round 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from hebench.config import parse_suite
from hebench.faults import FaultsSpec, fault_for
from hebench.protections.dp.ledger import PrivacyLedger
from hebench.results import read_records
from hebench.results.run_folder import RunFolder
from hebench.runtime.runner import Runner

pytestmark = pytest.mark.slow  # one small end-to-end federated run with DP-SGD

STEPS = 3
SUITE = {
    "name": "dp-dropouts",
    "seed": 4,
    "data": {"dataset": "digits", "clients": 3},
    "model": {"name": "mlp", "hidden": 4},
    "training": {"rounds": 3, "lr": 0.1, "local_steps": STEPS, "batch_size": 16, "min_clients": 1},
    "faults": {"dropout": 0.3, "dropout_phase": "after_train", "seed": 1},
    "configurations": [{"mode": "raw", "dp": {"level": "sample", "clip": 1.0, "noise_multiplier": 1.0}}],
    "measure": {"decryption_error": False},
}
LEFT = {(1, 1), (2, 2)}  # (round, client) that trained and left


def test_the_fault_seed_drops_the_clients_this_test_expects():
    spec = FaultsSpec(dropout=0.3, dropout_phase="after_train", seed=1).resolved(4)
    assert {(r, c) for r in range(3) for c in range(3) if fault_for(spec, r, c).drops} == LEFT


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dp-dropouts") / "run"
    Runner(parse_suite(SUITE), out).run()
    return out


def test_a_round_left_after_training_is_not_charged(run):
    recs = read_records(run / "results.jsonl", kind="party_round").records
    steps = {(r.round, r.client): r.dp_steps for r in recs if r.role == "client"}
    for (r, c), charged in steps.items():
        taken = sum(1 for earlier in range(r + 1) if (earlier, c) not in LEFT)
        assert charged == STEPS * taken, (r, c)
    assert steps[(1, 1)] == steps[(0, 1)] == STEPS  # the round it left is not counted


def test_the_ledger_names_only_the_rounds_whose_update_was_sent(run):
    folder, label = RunFolder(run), parse_suite(SUITE).configurations[0].label
    for c in range(3):
        charged = [charge.round for charge in PrivacyLedger(folder.dp_ledger(label, c)).charges()]
        assert charged == [r for r in range(3) if (r, c) not in LEFT], c


def test_epsilon_does_not_grow_in_a_round_the_client_left(run):
    recs = read_records(run / "results.jsonl", kind="party_round").records
    eps = {(r.round, r.client): r.to_json()["dp_epsilon"] for r in recs if r.role == "client"}
    assert eps[(1, 1)] == pytest.approx(eps[(0, 1)], rel=1e-12)
    assert eps[(2, 2)] == pytest.approx(eps[(1, 2)], rel=1e-12)
    assert eps[(2, 1)] > eps[(1, 1)]  # a round it took part in is charged
