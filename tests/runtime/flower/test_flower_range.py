"""A compact update beyond its adapter's ``clip`` on Flower: the nodes scale it per tensor from the round's global
model and saturate what is left, counted (:mod:`hebench.fl.value_range`), as the local runtime's clients do.

One small suite (digits, a 1,210-value MLP whose initial weights reach about 0.12, 3 clients, 3 rounds,
``seal-bfv`` bits 16 with ``clip: 0.05``, so every tensor needs a scale of 4 or more) on the local runtime
and on ``--engine flower-sim``. Before the Flower nodes scaled, the run died in round 0 ("above the range
clip"); now it completes, records the scales and the count, and each round's aggregate is the local
runtime's within the adapter's precision times the round's largest scale.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hebench.config import parse_suite
from hebench.crypto import create_adapter
from hebench.results import read_records
from hebench.runtime.runner import Runner
from tests.conftest import INSTALLED
from tests.runtime.flower.sim_run import run_on_flower_sim

pytest.importorskip("flwr", reason="the hebench[flower] extra is not installed")
pytest.importorskip("ray", reason="flwr[simulation] (Ray) is not installed")
pytestmark = [pytest.mark.slow, pytest.mark.skipif("seal-bfv" not in INSTALLED, reason="TenSEAL not installed")]

LABEL, ROUNDS, CLIENTS = "compact", 3, 3
PARAMS = {"bits": 16, "clip": 0.05, "max_summands": CLIENTS}
SUITE = {
    "name": "flower-range",
    "seed": 4,
    "data": {"dataset": "digits", "clients": CLIENTS},
    "model": {"name": "mlp", "hidden": 16},
    "training": {"rounds": ROUNDS, "lr": 0.1},
    "configurations": [{"name": LABEL, "mode": "host-he", "adapter": "seal-bfv", "params": PARAMS}],
    "measure": {"timeout_s": 240, "decryption_error": True},
}


@pytest.fixture(scope="module")
def sim(tmp_path_factory) -> Path:
    return run_on_flower_sim(tmp_path_factory.mktemp("flower-sim-range"), SUITE)[0]


@pytest.fixture(scope="module")
def local(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("local-range")
    Runner(parse_suite(SUITE), out).run()
    return out


def _client_rounds(run: Path) -> list[dict]:
    records = read_records(run / "results.jsonl").records
    return [r.to_json() for r in records if r.kind == "party_round" and r.to_json().get("role") == "client"]


def _global(run: Path, r: int) -> np.ndarray:
    return np.load(run / "checkpoints" / LABEL / f"round-{r}.npy")


@pytest.mark.parametrize("runtime", ["local", "sim"])
def test_every_round_completes_with_its_scales_and_saturation_count_recorded(runtime, request):
    run = request.getfixturevalue(runtime)
    rounds = _client_rounds(run)
    assert sorted({r["round"] for r in rounds}) == list(range(ROUNDS))
    assert len(rounds) == ROUNDS * CLIENTS
    assert all(r["range_scale_max"] >= 4.0 for r in rounds), rounds  # the clip alone would have refused them
    assert all(r["clipped_values"] is not None and r["clipped_values"] >= 0 for r in rounds), rounds


def test_flower_sim_records_the_local_runtimes_scales(sim, local):
    def scales(run: Path) -> dict:
        return {(r["round"], r["client"]): r["range_scale_max"] for r in _client_rounds(run)}

    assert scales(sim) == scales(local)


def test_flower_sim_yields_the_local_runtimes_aggregate_within_precision_times_the_scale(sim, local):
    """Round 0 starts from the same seeded model on both runtimes: its aggregates agree within the adapter's
    precision times the scale (later rounds start from those slightly different models, and training moves the
    gap: each round's aggregate is then checked against the plaintext FedAvg of its own updates)."""
    precision = create_adapter("seal-bfv", PARAMS).info().precision
    largest = {r["round"]: r["range_scale_max"] for r in _client_rounds(local)}
    gap = float(np.abs(_global(sim, 0) - _global(local, 0)).max())
    assert gap <= 2 * precision * largest[0], (gap, precision, largest[0])


@pytest.mark.parametrize("runtime", ["local", "sim"])
def test_each_aggregate_is_the_plaintext_fedavg_within_precision_times_the_scale(runtime, request):
    """The decrypted, restored aggregate against the plaintext FedAvg of the same round's updates (the oracle):
    restored with another round's scales, it would be off by a factor of 2 or more, far above this bound."""
    run = request.getfixturevalue(runtime)
    precision = create_adapter("seal-bfv", PARAMS).info().precision
    largest = {r["round"]: r["range_scale_max"] for r in _client_rounds(run)}
    errors = {
        r.round: r.to_json().get("max_abs_error")
        for r in read_records(run / "results.jsonl").records
        if r.kind == "round"
    }
    assert sorted(errors) == list(range(ROUNDS))
    assert all(0 < errors[r] <= 2 * precision * largest[r] for r in range(ROUNDS)), (errors, precision, largest)
