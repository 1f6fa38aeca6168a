"""End to end on digits, twice: what the aggregator receives under client-level DP carries noise it cannot
regenerate from anything it holds (the suite, its seed, the round, the client index, the upload); two runs of
the same suite upload different noise while everything else stays equal; ``reproducible_noise`` reproduces,
is labelled and leaves a ``security_note``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hebench.config import parse_suite
from hebench.fl.streams import whole_updates
from hebench.net.transport import read_transcript
from hebench.protections.selective.split import PLAIN
from hebench.results import read_records
from hebench.results.run_folder import RunFolder
from hebench.runtime.runner import Runner

pytestmark = pytest.mark.slow  # two end-to-end federated runs

SEED, SIGMA = 9, 0.5
DP = {"level": "client", "clip": 1000.0, "noise_multiplier": SIGMA / 1000.0}  # a clip the update never reaches
SUITE = {
    "name": "dp-noise",
    "seed": SEED,
    "data": {"dataset": "digits", "clients": 2},
    "model": {"name": "mlp", "hidden": 4},
    "training": {"rounds": 1, "lr": 0.1},
    "configurations": [
        {"mode": "raw"},
        {"mode": "raw", "dp": DP},
        {"mode": "raw", "dp": {**DP, "reproducible_noise": True}},
    ],
    "measure": {"transcripts": True},
}
RAW, SECRET, REPRODUCIBLE = (c.label for c in parse_suite(SUITE).configurations)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> tuple[Path, Path]:
    out = tmp_path_factory.mktemp("dp-noise")
    for name in ("a", "b"):
        Runner(parse_suite(SUITE), out / name).run()
    return out / "a", out / "b"


def upload(run: Path, label: str, client: int) -> np.ndarray:
    """The update the aggregator received from ``client`` in round 0 of ``label``."""
    path = RunFolder(run).transcript(label, f"aggregator-from-client-{client}")
    (msg,) = whole_updates(read_transcript(path))
    return np.concatenate([PLAIN.decrypt(PLAIN.deserialize(b)) for b in msg.parts]).astype(np.float64)


def regenerated(client: int, size: int) -> np.ndarray:
    """The noise as the aggregator would rebuild it from public values (how hebench seeded it before the fix)."""
    return np.random.default_rng([SEED, 0, client, 0xD1FF]).normal(0.0, SIGMA, size)


@pytest.mark.parametrize("client", [0, 1])
def test_the_aggregator_cannot_remove_the_noise_it_received(runs, client):
    run, _ = runs
    clean = upload(run, RAW, client)  # same seed, same data, same initial model: the update without DP
    left = upload(run, SECRET, client) - clean - regenerated(client, clean.size)
    assert float(left.std()) > 0.6  # √2 σ ≈ 0.71 left over: the attack subtracted the wrong noise
    control = upload(run, REPRODUCIBLE, client) - clean - regenerated(client, clean.size)
    assert float(np.abs(control).max()) < 1e-4  # the same attack strips the debugging option's noise


def test_two_runs_upload_different_noise_and_everything_else_equal(runs):
    a, b = runs
    for client in (0, 1):
        np.testing.assert_array_equal(upload(a, RAW, client), upload(b, RAW, client))
        np.testing.assert_array_equal(upload(a, REPRODUCIBLE, client), upload(b, REPRODUCIBLE, client))
        diff = upload(a, SECRET, client) - upload(b, SECRET, client)
        assert float(diff.std()) == pytest.approx(np.sqrt(2) * SIGMA, rel=0.1)  # two independent N(0, σ²)
        noise = upload(a, SECRET, client) - upload(a, RAW, client)
        assert float(noise.std()) == pytest.approx(SIGMA, rel=0.1)

    def losses(run: Path) -> dict:
        recs = read_records(run / "results.jsonl", kind="party_round").records
        return {(r.config, r.client): r.train_loss for r in recs if r.role == "client"}

    assert losses(a) == losses(b)  # the training itself is the same in both runs


def test_reproducible_noise_is_labelled_and_noted(runs):
    run, _ = runs
    assert REPRODUCIBLE.endswith("-REPRODUCIBLE-NOISE") and "REPRODUCIBLE" not in SECRET
    notes = read_records(run / "results.jsonl", kind="security_note").records
    assert [n.config for n in notes] == [REPRODUCIBLE]
    assert "NO differential privacy" in notes[0].problem
