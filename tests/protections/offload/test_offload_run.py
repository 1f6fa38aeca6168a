"""Offload runs: same model as host-he, keys only on engines, ciphertext only to the aggregator."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from hebench.analysis.summary import summarize_run
from hebench.config import parse_suite
from hebench.crypto import load_adapter
from hebench.crypto.base import CIPHERTEXT_MAGIC
from hebench.net.transport import read_transcript
from hebench.results import read_records
from hebench.runtime.runner import Runner
from tests.conftest import INSTALLED

pytestmark = [pytest.mark.slow, pytest.mark.skipif("tenseal-ckks" not in INSTALLED, reason="TenSEAL not installed")]
SUITE = {
    "name": "offload",
    "data": {"dataset": "digits", "clients": 2},
    "model": {"name": "mlp", "hidden": 4},
    "training": {"rounds": 2, "lr": 0.1, "key_rotation_rounds": 1},
    "configurations": [
        {"mode": "host-he", "adapter": "tenseal-ckks"},
        {"mode": "offload", "adapter": "tenseal-ckks"},
        {"mode": "offload", "adapter": "tenseal-ckks", "transport": "tls"},  # every channel over mutual TLS
    ],
    "offload": {"tls": True, "chunk_values": 4096},
    "measure": {"transcripts": True, "timeout_s": 120},
}


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("offload")
    Runner(parse_suite(json.loads(json.dumps(SUITE))), out).run()
    return out


def records(run: Path) -> list[dict]:
    return [r.to_json() for r in read_records(run / "results.jsonl").records]


def test_offload_trains_the_same_model_as_host_he(run):
    rows = {r.config: r.to_json() for r in summarize_run(read_records(run / "results.jsonl").records)}
    host_he, offload = rows["host-he/tenseal-ckks"], rows["offload/tenseal-ckks"]
    assert offload["rounds_done"] == 2 and offload["accuracy"] == pytest.approx(host_he["accuracy"], abs=1e-6)
    assert offload["max_abs_error"] < 1e-5
    assert offload["engine_cpu_s_per_round"] > 0 and offload["host_engine_bytes_per_round"] > 0


def test_engines_run_on_their_own_cores(run):
    rows = {r.config: r.to_json() for r in summarize_run(read_records(run / "results.jsonl").records)}
    offload = rows["offload/tenseal-ckks"]
    if len(os.sched_getaffinity(0)) > 1:
        assert not set(offload["engine_cores"]) & set(offload["host_cores"])


def engine_secrets(run: Path) -> list[bytes]:
    folder = run / "transcripts" / "offload_tenseal-ckks"
    keys = [
        m for i in range(2) for m in read_transcript(folder / f"engine-{i}" / "engine-keys.bin") if m.kind == "keys"
    ]
    assert {m.meta["epoch"] for m in keys} == {0, 1}  # rotated every round
    return [load_adapter(m.parts[0]).secret_key_bytes() for m in keys]


def test_offload_over_transport_tls_trains_the_same_model_and_keeps_no_ca_key(run):
    rows = {r.config: r.to_json() for r in summarize_run(read_records(run / "results.jsonl").records)}
    tls, tcp = rows["offload/tenseal-ckks/tls"], rows["offload/tenseal-ckks"]
    assert tls["rounds_done"] == 2 and tls["accuracy"] == pytest.approx(tcp["accuracy"], abs=1e-6)
    assert (run / "certs" / "engine-1.pem").exists() and (run / "certs" / "parties-offload_tenseal-ckks_tls").is_dir()
    assert not list(run.rglob("ca-key.pem"))  # the run's CAs signed their certificates and were forgotten


def test_keys_rotate_each_round(run):
    ids = {
        r["epoch"]: r["key_id"] for r in records(run) if r["kind"] == "keygen" and r["config"] == "offload/tenseal-ckks"
    }
    assert set(ids) == {0, 1} and ids[0] != ids[1]


def test_host_and_aggregator_never_receive_secret_key_bytes(run):
    secrets = engine_secrets(run)
    folder = run / "transcripts" / "offload_tenseal-ckks"
    host_bytes = b"".join((folder / f"client-{i}.bin").read_bytes() for i in range(2))
    agg_bytes = b"".join(p.read_bytes() for p in folder.glob("aggregator*.bin"))
    assert host_bytes and agg_bytes
    for secret in secrets:
        assert secret not in host_bytes and secret not in agg_bytes
    host_msgs = [m for i in range(2) for m in read_transcript(folder / f"client-{i}.bin")]
    assert "keys" not in {m.kind for m in host_msgs} and {"train", "result"} <= {m.kind for m in host_msgs}


def test_engine_to_aggregator_carries_ciphertext_only(run):
    folder = run / "transcripts" / "offload_tenseal-ckks"
    chunks = [
        m for p in folder.glob("aggregator-from-client-*.bin") for m in read_transcript(p) if m.kind == "update_chunk"
    ]
    assert chunks
    for msg in chunks:
        (part,) = msg.parts
        header = json.loads(part[8 : 8 + int.from_bytes(part[4:8], "big")])
        assert part.startswith(CIPHERTEXT_MAGIC) and header["adapter"] == "tenseal-ckks"
