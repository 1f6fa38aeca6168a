"""End-to-end streaming: the frame limit bounds a chunk, not an update; a BatchNorm model under compact HE runs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from hebench.config import parse_suite
from hebench.net.limits import ENV_MAX_FRAME
from hebench.results import read_records
from hebench.runtime.runner import Runner
from tests.conftest import INSTALLED

pytestmark = [pytest.mark.slow, pytest.mark.skipif("seal-bfv" not in INSTALLED, reason="TenSEAL not installed")]

FRAME = 2 << 20  # 2 MiB: above the CKKS secret key set (1.4 MB), below every update of these models
COMPACT = {"bits": 16, "clip": 1.0, "max_summands": 2}
SUITE = {
    "name": "streamed",
    "seed": 2,
    "data": {"dataset": "digits", "clients": 2},
    "model": {"name": "mlp", "hidden": 8192},  # 6,512,650 parameters (28x28 inputs): 26 MB raw, 17 MB compact
    "training": {"rounds": 2, "lr": 0.05},
    "runtime": {"chunk_values": 16384},
    "offload": {"chunk_values": 16384},
    "configurations": [
        {"mode": "raw"},
        {"name": "compact", "mode": "host-he", "adapter": "seal-bfv", "params": COMPACT},
        {"name": "offload-compact", "mode": "offload", "adapter": "seal-bfv", "params": COMPACT},
    ],
}
CKKS = {  # 407,050 parameters: 33 MB under CKKS
    **SUITE,
    "model": {"name": "mlp", "hidden": 512},
    "configurations": [{"mode": "host-he", "adapter": "tenseal-ckks"}],
}


def _run(out: Path, suite: dict, frame: int | None = None) -> Path:
    with pytest.MonkeyPatch.context() as patch:
        if frame is not None:
            patch.setenv(ENV_MAX_FRAME, str(frame))
        Runner(parse_suite(json.loads(json.dumps(suite))), out).run()
    return out


@pytest.fixture(scope="module")
def small_frames(tmp_path_factory) -> Path:
    return _run(tmp_path_factory.mktemp("frames"), SUITE, FRAME)


@pytest.fixture(scope="module")
def small_frames_ckks(tmp_path_factory) -> Path:
    return _run(tmp_path_factory.mktemp("frames-ckks"), CKKS, FRAME)


def _records(run: Path, kind: str) -> list[dict]:
    return [r.to_json() for r in read_records(run / "results.jsonl").records if r.to_json()["kind"] == kind]


def test_a_frame_limit_below_one_update_no_longer_fails_a_run(small_frames, small_frames_ckks):
    rounds = _records(small_frames, "round") + _records(small_frames_ckks, "round")
    assert {(r["config"], r["round"]) for r in rounds} == {
        (c, i) for c in ("raw", "host-he/tenseal-ckks", "compact", "offload-compact") for i in (0, 1)
    }
    uploads = {
        r["config"]: max(r["update_bytes"].values())
        for run in (small_frames, small_frames_ckks)
        for r in _records(run, "party_round")
        if r["role"] == "aggregator"
    }
    assert len(uploads) == 4 and all(size > FRAME for size in uploads.values()), uploads  # several frames each
    for r in rounds:  # each streamed aggregate is FedAvg within the adapter's precision
        assert r["max_abs_error"] < (3.1e-5 if "compact" in r["config"] else 1e-6), r


def test_a_chunked_raw_run_is_bit_identical_to_an_unchunked_one(small_frames, tmp_path):
    whole = {**SUITE, "runtime": {"chunk_values": 10**7}, "configurations": [{"mode": "raw"}]}
    unchunked = _run(tmp_path / "whole", whole)
    for r in (0, 1):
        name = f"checkpoints/raw/round-{r}.npy"
        np.testing.assert_array_equal(np.load(small_frames / name), np.load(unchunked / name))


def test_chunked_compact_runs_in_host_he_and_offload_equal_unchunked_ones(tmp_path):
    """Compact HE decrypts exact integer sums: chunk by chunk or whole, the same aggregate bit for bit (with
    nearest rounding: stochastic rounding draws from an unseeded generator, so no two runs are equal)."""
    nearest = {**COMPACT, "rounding": "nearest"}
    suite = {
        **SUITE,
        "model": {"name": "mlp", "hidden": 256},  # 203,530 parameters
        "configurations": [
            {"name": "compact", "mode": "host-he", "adapter": "seal-bfv", "params": nearest},
            {"name": "offload-compact", "mode": "offload", "adapter": "seal-bfv", "params": nearest},
        ],
    }
    chunked = {**suite, "runtime": {"chunk_values": 4096}, "offload": {"chunk_values": 4096}}
    whole = {**suite, "runtime": {"chunk_values": 10**7}, "offload": {"chunk_values": 10**7}}
    runs = [_run(tmp_path / "chunked", chunked), _run(tmp_path / "whole", whole)]
    for name in ("compact", "offload-compact"):
        for r in (0, 1):
            path = f"checkpoints/{name}/round-{r}.npy"
            np.testing.assert_array_equal(np.load(runs[0] / path), np.load(runs[1] / path))


def test_a_batchnorm_model_runs_several_rounds_under_compact_he_with_the_default_clip(tmp_path):
    suite = {
        "name": "bn-compact",
        "seed": 0,
        "data": {"dataset": "natural", "clients": 2},
        "model": {"name": "resnet18"},
        "training": {"rounds": 3, "local_steps": 1, "batch_size": 4, "lr": 0.05},
        "configurations": [{"name": "compact", "mode": "host-he", "adapter": "seal-bfv", "params": {"bits": 16}}],
    }
    run = _run(tmp_path / "bn", suite)
    assert [r["round"] for r in _records(run, "round")] == [0, 1, 2]
    clients = [r for r in _records(run, "party_round") if r["role"] == "client"]
    parameters = next(r["parameters"] for r in _records(run, "configuration"))
    counts = [(r["round"], r["client"], r["clipped_values"]) for r in clients]
    # the scales keep the update in range; what still saturates (a tensor that more than doubled) is counted
    assert all(c is not None and c <= 1e-4 * parameters for _, _, c in counts), counts
    assert max(r["range_scale_max"] for r in clients) >= 2.0  # BatchNorm weights (1.0) outgrow clip / 2
