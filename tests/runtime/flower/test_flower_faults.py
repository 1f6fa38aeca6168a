"""A suite's ``faults:`` block on Flower: the same clients fail at the same points as on the local runtime.

One small suite (digits, a 3,190-value MLP, 4 clients, 3 rounds, 30 % dropout in random phases,
``min_clients: 3``; raw, CKKS, and compact-16 with headroom for 4 summands) on the local runtime (a
process per client, and a pool: raw) and on ``--engine flower-sim``. The fault seed is chosen so that
every phase occurs and round 0 is skipped (2 of 4 arrive: checked, so the test cannot pass without
them). Every runtime records the same clients dropped at the same phases; flower-sim's raw aggregates
are the local runtime's; its CKKS and compact aggregates are the survivors' plaintext FedAvg within
precision (compact: its nodes weigh their own updates before encryption, or the unequal sample counts
would need more headroom than it has).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from hebench.config import parse_suite
from hebench.crypto import create_adapter
from hebench.results import read_records
from hebench.results.run_folder import RunFolder
from hebench.runtime.runner import Runner
from tests.conftest import INSTALLED
from tests.runtime.flower.sim_run import run_on_flower_sim

pytest.importorskip("flwr", reason="the hebench[flower] extra is not installed")
pytest.importorskip("ray", reason="flwr[simulation] (Ray) is not installed")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif("tenseal-ckks" not in INSTALLED, reason="TenSEAL not installed"),
]

RAW, CKKS, COMPACT_LABEL = "raw", "host-he/tenseal-ckks", "compact"
ROUNDS, CLIENTS = 3, 4
COMPACT = {"bits": 16, "clip": 2.0, "max_summands": CLIENTS}
SUITE = {
    "name": "flower-faults",
    "seed": 3,
    "data": {"dataset": "digits", "clients": CLIENTS},
    "model": {"name": "mlp", "hidden": 4},
    "training": {"rounds": ROUNDS, "lr": 0.1, "min_clients": 3},
    "faults": {"dropout": 0.3, "dropout_phase": "random", "seed": 2},
    "configurations": [
        {"mode": "raw"},
        {"mode": "host-he", "adapter": "tenseal-ckks"},
        # headroom for 4 summands only: the unequal sample counts (359/360) are weighed at the nodes (PRE)
        {"name": "compact", "mode": "host-he", "adapter": "seal-bfv", "params": COMPACT},
    ],
    "measure": {"timeout_s": 240},
}


@pytest.fixture(scope="module")
def sim(tmp_path_factory) -> Path:
    return run_on_flower_sim(tmp_path_factory.mktemp("flower-sim-faults"), SUITE)[0]


@pytest.fixture(scope="module", params=["process", "pool"])
def local(request, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp(f"local-faults-{request.param}")
    runtime = {"hosting": request.param, **({"workers": 2} if request.param == "pool" else {})}
    suite = {**json.loads(json.dumps(SUITE)), "runtime": runtime, "configurations": [{"mode": "raw"}]}
    Runner(parse_suite(suite), out).run()
    return out


def _of(run: Path, kind: str) -> list[dict]:
    return [r.to_json() for r in read_records(run / "results.jsonl").records if r.kind == kind]


def _dropped(run: Path, config: str) -> dict[int, tuple[dict, bool]]:
    return {r["round"]: (r["dropped"], r["skipped"]) for r in _of(run, "round") if r["config"] == config}


def test_flower_sim_drops_the_clients_the_local_runtime_drops(sim, local):
    want = _dropped(local, RAW)
    assert len(want) == ROUNDS
    phases = {p for dropped, _ in want.values() for p in dropped.values()}
    assert phases == {"before_train", "after_train", "after_upload"}  # the fault seed exercises every phase
    assert want[0][1] and not want[1][1] and not want[2][1]  # round 0 below min_clients: skipped
    assert _dropped(sim, RAW) == want
    assert _dropped(sim, CKKS) == want
    assert _dropped(sim, COMPACT_LABEL) == want
    servers = [p for p in _of(sim, "party_round") if p["role"] == "aggregator"]
    assert len(servers) == 3 * ROUNDS
    for rec in servers:
        gone = {int(c) for c, p in rec["dropped"].items() if p != "after_upload"}
        assert set(rec["arrived"]) == set(rec["selected"]) - gone
        if not rec["skipped"]:
            assert {int(c) for c in rec["weights"]} == set(rec["arrived"])
            assert abs(sum(rec["weights"].values()) - 1) < 1e-12


def test_nodes_record_where_they_left(sim):
    clients = [p for p in _of(sim, "party_round") if p["role"] == "client"]
    assert len(clients) == 3 * ROUNDS * CLIENTS
    left = [c for c in clients if c.get("dropout_phase")]
    assert {c["dropout_phase"] for c in left} == {"before_train", "after_train", "after_upload"}
    assert all("train" not in c["phases"] for c in left if c["dropout_phase"] == "before_train")
    assert all("train" in c["phases"] for c in left if c["dropout_phase"] != "before_train")
    assert all(c.get("skipped") for c in clients if c["round"] == 0)


def _global(run: Path, label: str, r: int) -> np.ndarray:
    return np.load(RunFolder(run).checkpoint(label, r))


def test_flower_sims_aggregates_are_the_local_runtimes(sim, local):
    for r in range(ROUNDS):
        # a skipped round keeps the model (round 0: the seeded initial one) on both runtimes
        np.testing.assert_allclose(_global(sim, RAW, r), _global(local, RAW, r), atol=1e-6)
    # round 0 was skipped: every configuration still holds the seeded initial model, round 1 moved it
    assert np.array_equal(_global(sim, RAW, 0), _global(sim, CKKS, 0))
    assert not np.array_equal(_global(sim, RAW, 0), _global(sim, RAW, 1))
    for label, adapter, params in ((CKKS, "tenseal-ckks", {}), (COMPACT_LABEL, "seal-bfv", COMPACT)):
        precision = create_adapter(adapter, params).info().precision
        errors = {r["round"]: r.get("max_abs_error") for r in _of(sim, "round") if r["config"] == label}
        # each aggregate against the plaintext FedAvg of its survivors, times the 1/weight_total rescale (≤ 4/3)
        assert all(0 < errors[r] <= 2 * precision for r in (1, 2)), (label, errors)
    assert np.max(np.abs(_global(sim, CKKS, ROUNDS - 1) - _global(sim, RAW, ROUNDS - 1))) < 1e-4
