"""End to end on digits: a TLS run equals the TCP one, and the aggregator (the attacker) still sees the plain
update; a client-level DP run uploads noisy updates; sample-level DP records ε; a modelled TEE row is written
apart from the measured records."""

from __future__ import annotations

import json
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

pytestmark = pytest.mark.slow  # end-to-end federated runs

DP = {"level": "client", "clip": 0.5, "noise_multiplier": 0.5}
SUITE = {
    "name": "dp-tls",
    "seed": 5,
    "data": {"dataset": "digits", "clients": 2},
    "model": {"name": "mlp", "hidden": 4},
    "training": {"rounds": 2, "lr": 0.1},
    "configurations": [
        {"mode": "raw"},
        {"mode": "raw", "transport": "tls", "tee": {"coefficients": "COEFFS", "mechanisms": ["tee"]}},
        {"mode": "raw", "dp": DP},
        {"mode": "raw", "dp": {"level": "sample", "clip": 1.0, "noise_multiplier": 1.0}},
        {"name": "shares/tls", "mode": "secret-sharing", "params": {"aggregators": 2}, "transport": "tls"},
    ],
    "measure": {"transcripts": True},
}


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dp-tls")
    coeffs = out.parent / "coeffs.yaml"
    coeffs.write_text("source: test coefficients\nmechanisms: {tee: 0.5}\n")
    suite = json.loads(json.dumps(SUITE).replace("COEFFS", str(coeffs)))
    Runner(parse_suite(suite), out).run()
    return out


def records(run: Path) -> list[dict]:
    return [r.to_json() for r in read_records(run / "results.jsonl").records]


def test_tls_run_equals_the_tcp_run_and_records_its_transport(run):
    recs = records(run)
    final = {r["config"]: r for r in recs if r["kind"] == "round" and r["round"] == 1}
    assert final["raw/tls/tee-modelled"]["accuracy"] == final["raw"]["accuracy"]
    raw_ck = np.load(run / "checkpoints" / "raw" / "round-1.npy")
    tls_dirs = [p for p in (run / "checkpoints").iterdir() if "tls" in p.name]
    np.testing.assert_array_equal(np.load(tls_dirs[0] / "round-1.npy"), raw_ck)
    transports = {r["config"]: r.get("transport") for r in recs if r["kind"] == "configuration"}
    assert transports["raw/tls/tee-modelled"] == "tls" and transports["raw"] == "tcp"


def test_secret_sharing_runs_over_tls_with_its_share_holder_and_keeps_no_ca_key(run):
    recs = records(run)
    assert [r["round"] for r in recs if r["kind"] == "round" and r["config"] == "shares/tls"] == [0, 1]
    holder = [r for r in recs if r["kind"] == "party_round" and r.get("role") == "aggregator-1"]
    assert len(holder) == 2 and all(r["config"] == "shares/tls" for r in holder)
    assert (run / "certs" / "parties-shares_tls" / "aggregator-1-server.pem").exists()
    assert not list(run.rglob("ca-key.pem"))  # the run's CA signed the party certificates and was forgotten


def seen(run: Path, label: str) -> list:
    """The updates the aggregator received from client 0 in configuration ``label``."""
    path = RunFolder(run).transcript(label, "aggregator-from-client-0")
    return whole_updates(read_transcript(path))


def vector(update) -> np.ndarray:
    return np.concatenate([PLAIN.decrypt(PLAIN.deserialize(b)) for b in update.parts])


def test_over_tls_the_aggregator_still_receives_the_plain_update(run):
    seen_tls, seen_raw = seen(run, "raw/tls/tee-modelled"), seen(run, "raw")
    assert seen_tls and [m.parts for m in seen_tls] == [m.parts for m in seen_raw]


def test_client_dp_uploads_noisy_updates(run):
    clean, noisy = seen(run, "raw")[0], seen(run, "raw/dp-client-z0.5-c0.5")[0]
    # both start from the same global model: the difference is the clipped update's change plus N(0, 0.25²)
    diff = vector(noisy) - vector(clean)
    assert 0.15 < float(diff.std()) < 0.4


def test_sample_dp_records_epsilon_growing_over_rounds(run):
    eps = {
        (r["client"], r["round"]): r["dp_epsilon"]
        for r in records(run)
        if r["kind"] == "party_round" and r.get("dp_epsilon") is not None
    }
    assert set(eps) == {(c, r) for c in (0, 1) for r in (0, 1)}
    assert all(eps[(c, 1)] > eps[(c, 0)] > 0 for c in (0, 1))


def test_the_modelled_tee_row_is_a_record_of_its_own(run):
    recs = records(run)
    (modelled,) = [r for r in recs if r["kind"] == "modelled_cost"]
    assert modelled["modelled"] is True and modelled["config"] == "raw/tls/tee-modelled"
    assert modelled["modelled_round_wall_s"] == pytest.approx(1.5 * modelled["baseline_round_wall_s"])
    assert modelled["baseline_round_wall_s"] > 0
