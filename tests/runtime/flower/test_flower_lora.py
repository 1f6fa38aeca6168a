"""A LoRA model on Flower (``--engine flower-sim``): the tiny pretrained decoder's adapters are what the nodes
train and send, host-HE's aggregate of them equals plaintext FedAvg, and node 0 reports held-out perplexity."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hebench.results import read_records
from tests.conftest import INSTALLED
from tests.runtime.flower.sim_run import run_on_flower_sim

pytest.importorskip("flwr", reason="the hebench[flower] extra is not installed")
pytest.importorskip("ray", reason="flwr[simulation] (Ray) is not installed")
pytestmark = [pytest.mark.slow, pytest.mark.skipif("tenseal-ckks" not in INSTALLED, reason="TenSEAL not installed")]

ADAPTERS = 2 * 4 * (128 + 3 * 128)  # LoRA rank 4 on the tiny decoder's c_attn, 2 layers
SUITE = {
    "name": "flower-lora",
    "seed": 4,
    "data": {"dataset": "shakespeare", "clients": 2},
    "model": {"name": "gpt2_tiny", "pretrained": True, "fine_tuning": {"kind": "lora", "rank": 4}},
    "training": {"rounds": 2, "local_steps": 2, "batch_size": 4, "optimizer": "adamw", "lr": 0.003},
    "configurations": [{"mode": "raw"}, {"mode": "host-he", "adapter": "tenseal-ckks"}],
    "measure": {"timeout_s": 600},
    "text_leakage": False,  # what the nodes train and send; the text attacks: tests/inversion/text
}


@pytest.fixture(scope="module")
def sim(tmp_path_factory):
    run, _ = run_on_flower_sim(tmp_path_factory.mktemp("flower-lora"), SUITE)
    return run


def _of(run, kind: str) -> list[dict]:
    return [r.to_json() for r in read_records(run / "results.jsonl").records if r.kind == kind]


def test_flower_nodes_train_and_send_the_adapters_and_host_he_matches_fedavg(sim):
    configs = {c["config"]: c for c in _of(sim, "configuration")}
    assert {c["runtime"] for c in configs.values()} == {"flower-sim"}
    assert {c["update_parameters"] for c in configs.values()} == {ADAPTERS}
    rounds = [r for r in _of(sim, "round")]
    assert {(r["config"], r["round"]) for r in rounds} == {(c, i) for c in configs for i in range(2)}
    for r in rounds:
        assert r["max_abs_error"] <= (1e-4 if r["config"] != "raw" else 1e-6), r
        assert r["perplexity"] == pytest.approx(math.exp(r["loss"])) and 100 < r["perplexity"] < 300
    assert np.load(sim / "checkpoints" / "raw" / "round-1.npy").shape == (ADAPTERS,)


def test_flower_raw_uploads_are_the_adapters_size_not_the_models(sim):
    clients = [r for r in _of(sim, "party_round") if r["config"] == "raw" and r["role"] == "client"]
    uploads = [c["bytes_sent"] for c in clients if "train" in c["phases"]]
    assert uploads and all(4 * ADAPTERS <= b < 4 * ADAPTERS + 64 * 1024 for b in uploads), uploads
