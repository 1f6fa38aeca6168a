"""secagg and secret-sharing end to end on the local runtime: FedAvg within the quantisation bound, per-party
records (K aggregators), and a scan showing the aggregators never receive a client's plain update."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from hebench.config import parse_suite
from hebench.fl.streams import whole_updates
from hebench.net.transport import read_transcript
from hebench.results import read_records
from hebench.runtime.runner import Runner

pytestmark = pytest.mark.slow  # end-to-end federated runs

SUITE = {
    "name": "protections",
    "seed": 5,
    "data": {"dataset": "digits", "clients": 3},
    "model": {"name": "mlp", "hidden": 4},
    "training": {"rounds": 1, "lr": 0.1},
    "configurations": [
        {"mode": "raw"},
        # named: labels otherwise carry the params ("secagg[num_shares=3,…]")
        {"name": "secagg", "mode": "secagg", "params": {"num_shares": 3, "reconstruction_threshold": 2}},
        {"name": "secret-sharing", "mode": "secret-sharing", "params": {"aggregators": 3}},
    ],
    "measure": {"transcripts": True},
}


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("protections")
    Runner(parse_suite(json.loads(json.dumps(SUITE))), out).run()
    return out


def records(run: Path) -> list[dict]:
    return [r.to_json() for r in read_records(run / "results.jsonl").records]


def test_both_modes_match_plain_fedavg_within_the_quantisation_bound(run):
    rounds = {r["config"]: r for r in records(run) if r["kind"] == "round"}
    assert rounds["secagg"]["max_abs_error"] < 3 * 2 * 8.0 / 2**22  # 3 clients, one step each
    assert rounds["secret-sharing"]["max_abs_error"] < 8.0 / (2**23 - 1)  # weighted mean of steps
    assert rounds["secagg"]["max_abs_error"] > 0


def test_every_aggregator_reports_its_round_and_secagg_its_phases(run):
    rows = [r for r in records(run) if r["kind"] == "party_round"]
    roles = {r["role"] for r in rows if r["config"] == "secret-sharing"}
    assert roles == {"client", "aggregator", "aggregator-1", "aggregator-2"}
    agg = next(r for r in rows if r["config"] == "secagg" and r["role"] == "aggregator")
    assert {"advertise_keys", "share_keys", "collect_masked", "unmask"} <= set(agg["phases"])
    client = next(r for r in rows if r["config"] == "secagg" and r["role"] == "client")
    assert {"advertise_keys", "share_keys", "masked_upload", "unmask"} <= set(client["phases"])
    conf = next(r for r in records(run) if r["kind"] == "configuration" and r["config"] == "secagg")
    assert conf["mode_security"]["work_factor_bits"] == 2 * 128


def plain_updates(run: Path) -> dict[int, bytes]:
    """Each client's round-0 update as raw mode's aggregator received it (same seed: same update everywhere)."""
    folder = run / "transcripts" / "raw"
    found = {}
    for i in range(3):
        (update,) = whole_updates(read_transcript(folder / f"aggregator-from-client-{i}.bin"))
        found[i] = update.parts[0]
    return found


@pytest.mark.parametrize("config", ["raw", "secagg", "secret-sharing"])
def test_aggregators_never_receive_a_plain_update(run, config):
    folder = run / "transcripts" / config
    received = b"".join(p.read_bytes() for p in folder.glob("aggregator*-from-client-*.bin"))
    values = {i: np.frombuffer(u[len(u) % 4 :], np.float32)[1000:1016] for i, u in plain_updates(run).items()}
    hits = {i for i, v in values.items() if v.tobytes() in received}  # 16 float32 values from the middle
    hits |= {i for i, v in values.items() if v.astype(np.float64).tobytes() in received}  # or as float64
    if config == "raw":
        assert hits == {0, 1, 2}  # the control: the scan finds plain updates where they are sent
    else:
        assert hits == set()
