"""End to end: secagg's masked uploads and secret sharing's shares stream, so a frame limit below one update no
longer fails a run in either mode (on the code before streaming, each sent its whole update as one frame)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hebench.config import parse_suite
from hebench.net.limits import ENV_MAX_FRAME
from hebench.results import read_records
from hebench.runtime.runner import Runner

pytestmark = pytest.mark.slow

FRAME = 1 << 20  # 1 MiB: below every update and aggregate of this model in both modes
SUITE = {
    "name": "ring-streamed",
    "seed": 3,
    "data": {"dataset": "digits", "clients": 2},
    "model": {"name": "mlp", "hidden": 512},  # 407,050 parameters: 1.6 MB masked (uint32), 3.3 MB per share
    "training": {"rounds": 1, "lr": 0.05},
    "runtime": {"chunk_values": 16384},
    "configurations": [{"mode": "secagg"}, {"mode": "secret-sharing"}],
}


def test_a_frame_limit_below_one_update_no_longer_fails_a_secagg_or_secret_sharing_run(tmp_path: Path):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(ENV_MAX_FRAME, str(FRAME))
        Runner(parse_suite(json.loads(json.dumps(SUITE))), tmp_path).run()
    records = [r.to_json() for r in read_records(tmp_path / "results.jsonl").records]
    rounds = {r["config"]: r for r in records if r["kind"] == "round"}
    assert set(rounds) == {"secagg", "secret-sharing"}, rounds.keys()
    assert not any(r.get("skipped") for r in rounds.values())
    uploads = {
        r["config"]: max(r["update_bytes"].values())
        for r in records
        if r["kind"] == "party_round" and r["role"] == "aggregator"
    }
    assert all(size > FRAME for size in uploads.values()), uploads  # each update crossed in several frames
    for r in rounds.values():  # the streamed aggregate is FedAvg within the quantisation
        assert r["max_abs_error"] < 1e-3, r
