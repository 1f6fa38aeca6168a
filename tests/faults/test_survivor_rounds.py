"""Every summing mode finishes its rounds with the survivors, and each round's aggregate is the plaintext FedAvg
of the clients that arrived (the runner's oracle), within the adapter's precision.

One small run (digits, 5 clients, a 610-parameter MLP, 2 rounds, a pool of workers) at 30 % dropout, every
phase drawn at random; the fault seed is chosen so that each phase occurs (checked, so the test cannot pass
without them), and the raw configuration is the reference for the others.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from hebench.config import parse_suite
from hebench.results import read_records
from hebench.results.run_folder import RunFolder
from hebench.runtime.runner import Runner
from tests.conftest import INSTALLED

pytestmark = [pytest.mark.slow, pytest.mark.skipif("seal-bfv" not in INSTALLED, reason="TenSEAL not installed")]

ROUNDS = 2
COMPACT = {"bits": 16, "clip": 2.0, "max_summands": 8}
SUITE = {
    "name": "survivors",
    "seed": 1,
    "data": {"dataset": "digits", "clients": 5},
    "model": {"name": "mlp", "hidden": 8},
    "training": {"rounds": ROUNDS},
    "runtime": {"hosting": "pool", "workers": 2},
    "faults": {"dropout": 0.3, "dropout_phase": "random", "seed": 1},
    "configurations": [
        {"mode": "raw"},
        {"mode": "host-he", "adapter": "tenseal-ckks"},
        {"name": "compact", "mode": "host-he", "adapter": "seal-bfv", "params": COMPACT},  # weighs at the clients
        {"mode": "host-he", "adapter": "paillier"},
        {"mode": "offload", "adapter": "tenseal-ckks"},
    ],
}
# the stated precision of each adapter's average, times the 1/weight_total rescale (at most 5/2 here)
# and the range scale (1 here): compact's step is 2 * clip / 2**16
PRECISION = {"raw": 1e-6, "host-he/tenseal-ckks": 1e-6, "offload/tenseal-ckks": 1e-6, "host-he/paillier": 1e-4}
PRECISION["compact"] = 2.5 * 4.0 / 2**16


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("survivors")
    Runner(parse_suite(json.loads(json.dumps(SUITE))), out).run()
    return out


def _of(run: Path, kind: str) -> list[dict]:
    return [r.to_json() for r in read_records(run / "results.jsonl").records if r.to_json()["kind"] == kind]


def test_every_mode_completes_every_round_with_the_survivors(run):
    rounds = _of(run, "round")
    assert {(r["config"], r["round"]) for r in rounds} == {(c, i) for c in PRECISION for i in range(ROUNDS)}
    phases = {p for r in rounds for p in (r["dropped"] or {}).values()}
    assert phases == {"before_train", "after_train", "after_upload"}  # the seed exercises every phase
    for r in rounds:
        assert not r["skipped"] and r["arrived"] + sum(p != "after_upload" for p in r["dropped"].values()) == 5
        assert r["max_abs_error"] < PRECISION[r["config"]], r


def test_the_aggregator_weighs_only_the_clients_that_arrived(run):
    for rec in _of(run, "party_round"):
        if rec["role"] != "aggregator":
            continue
        gone = {int(c) for c, p in rec["dropped"].items() if p != "after_upload"}
        assert set(rec["arrived"]) == set(rec["selected"]) - gone
        assert {int(c) for c in rec["weights"]} == set(rec["arrived"])
        assert abs(sum(rec["weights"].values()) - 1) < 1e-12


def test_every_configuration_drops_the_same_clients_and_reaches_the_raw_model(run):
    rounds = _of(run, "round")
    by_config: dict[str, list] = {}
    for r in sorted(rounds, key=lambda r: r["round"]):
        by_config.setdefault(r["config"], []).append(r["dropped"])
    reference = by_config.pop("raw")
    assert all(dropped == reference for dropped in by_config.values())
    folder = RunFolder(run)
    raw = np.load(folder.checkpoint("raw", ROUNDS - 1))
    for label in by_config:
        assert np.max(np.abs(np.load(folder.checkpoint(label, ROUNDS - 1)) - raw)) < 10 * PRECISION[label], label


def test_clients_record_where_they_left(run):
    left = [r for r in _of(run, "party_round") if r["role"] == "client" and r.get("dropout_phase")]
    assert left and all(r["dropout_phase"] in ("before_train", "after_train", "after_upload") for r in left)
    assert all("train" not in r["phases"] for r in left if r["dropout_phase"] == "before_train")
    assert all("train" in r["phases"] for r in left if r["dropout_phase"] == "after_train")


def test_one_process_per_client_drops_the_same_clients_as_the_pool(run, tmp_path):
    suite = {**SUITE, "runtime": {"hosting": "process"}, "configurations": [{"mode": "raw"}]}
    Runner(parse_suite(json.loads(json.dumps(suite))), tmp_path).run()
    pooled = {r["round"]: r["dropped"] for r in _of(run, "round") if r["config"] == "raw"}
    processes = {r["round"]: r["dropped"] for r in _of(tmp_path, "round")}
    assert processes == pooled and any(pooled.values())
