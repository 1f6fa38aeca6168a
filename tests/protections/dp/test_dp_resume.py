"""Sample-level DP's ε continues across ``--resume``: a run stopped after round 0 and resumed reports the same ε
for rounds 1 and 2 as one that ran straight through, from the client's privacy ledger, or (a run written before
ledgers existed) from the rounds it completed. The round records say how ε was accounted."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from hebench.config import parse_suite
from hebench.results import read_records
from hebench.runtime.runner import Runner

pytestmark = pytest.mark.slow  # end-to-end federated runs, one of them resumed twice

DP = {"level": "sample", "clip": 1.0, "noise_multiplier": 1.0, "delta": 1e-5}
SUITE = {
    "name": "dp-resume",
    "seed": 4,
    "data": {"dataset": "digits", "clients": 2},
    "model": {"name": "mlp", "hidden": 4},
    "training": {"rounds": 3, "lr": 0.1, "local_steps": 3, "batch_size": 16},
    "configurations": [{"mode": "raw", "dp": DP}],
    "measure": {"decryption_error": False},
}


def suite(rounds: int):
    return parse_suite({**SUITE, "training": {**SUITE["training"], "rounds": rounds}})


def client_rounds(run: Path) -> dict[tuple[int, int], dict]:
    """(client, round) → the client's latest round record (a resumed run's later record wins)."""
    recs = read_records(run / "results.jsonl", kind="party_round").records
    return {(r.client, r.round): r.to_json() for r in recs if r.role == "client"}


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("dp-resume")
    Runner(suite(3), out / "straight").run()
    Runner(suite(1), out / "resumed").run()  # stops after round 0
    shutil.copytree(out / "resumed", out / "old")
    for ledger in (out / "old").rglob("dp-ledger-*.jsonl"):
        ledger.unlink()  # as a run written before ledgers existed
    for name in ("resumed", "old"):
        Runner(suite(3), out / name).run(resume=True)
    return {name: out / name for name in ("straight", "resumed", "old")}


@pytest.mark.parametrize("name", ["resumed", "old"])
def test_a_resumed_run_reports_the_same_epsilon_as_a_straight_one(runs, name):
    straight, resumed = client_rounds(runs["straight"]), client_rounds(runs[name])
    assert set(resumed) == set(straight) == {(c, r) for c in (0, 1) for r in (0, 1, 2)}
    for key in straight:
        assert resumed[key]["dp_epsilon"] == pytest.approx(straight[key]["dp_epsilon"], rel=1e-9), key
        assert resumed[key]["dp_steps"] == straight[key]["dp_steps"] == 3 * (key[1] + 1)
    assert straight[(0, 2)]["dp_epsilon"] > straight[(0, 1)]["dp_epsilon"] > straight[(0, 0)]["dp_epsilon"]


def test_round_records_say_how_epsilon_was_accounted(runs):
    rec = client_rounds(runs["straight"])[(1, 2)]
    samples = 16 / rec["dp_sample_rate"]  # q = batch / local samples
    assert samples == pytest.approx(round(samples)) and 0 < rec["dp_sample_rate"] < 1
    assert rec["dp_accountant"] == "rdp" and rec["dp_delta"] == 1e-5 and rec["dp_steps"] == 9
