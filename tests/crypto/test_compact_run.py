"""A short federated run with the compact adapter: raw vs seal-bfv host-he (and offload) on digits, 2 rounds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import zstandard

from hebench.analysis.summary import summarize_run
from hebench.config import parse_suite
from hebench.crypto import load_adapter
from hebench.net.transport import read_transcript
from hebench.results import read_records
from hebench.runtime.runner import Runner
from tests.conftest import INSTALLED

pytestmark = [pytest.mark.slow, pytest.mark.skipif("seal-bfv" not in INSTALLED, reason="TenSEAL not installed")]

LABEL = "host-he/seal-bfv"
SUITE = {
    "name": "compact",
    "seed": 1,
    "data": {"dataset": "digits", "clients": 2},  # 719 samples each: FedAvg weights are halves
    "model": {"name": "mlp", "hidden": 8},
    "training": {"rounds": 2, "lr": 0.1},
    "configurations": [
        {"mode": "raw"},
        # named: labels otherwise carry the params ("host-he/seal-bfv[bits=16,…]")
        {
            "name": LABEL,
            "mode": "host-he",
            "adapter": "seal-bfv",
            "params": {"bits": 16, "clip": 4.0, "max_summands": 4},
        },
        {
            "name": "offload/seal-bfv",
            "mode": "offload",
            "adapter": "seal-bfv",
            "params": {"bits": 16, "clip": 4.0, "max_summands": 4},
        },
    ],
    "measure": {"transcripts": True},
}


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("compact")
    Runner(parse_suite(json.loads(json.dumps(SUITE))), out).run()
    return out


def _records(run: Path) -> list[dict]:
    return [r.to_json() for r in read_records(run / "results.jsonl").records]


def test_compact_run_matches_raw_within_the_stated_precision_every_round(run):
    records = _records(run)
    keygen = next(r for r in records if r["kind"] == "keygen" and r["config"] == LABEL)
    precision = keygen["info"]["precision"]
    assert keygen["info"]["encryption"] == "seeded-symmetric"  # the key authority (and so every holder) has the key
    rounds = {(r["config"], r["round"]): r for r in records if r["kind"] == "round"}
    for r in range(2):
        compact, raw = rounds[(LABEL, r)], rounds[("raw", r)]
        assert 0 < compact["max_abs_error"] <= precision
        assert compact["accuracy"] == pytest.approx(raw["accuracy"], abs=0.02)


def test_aggregator_sums_seeded_ciphertexts_without_any_secret_key(run):
    folder = run / "transcripts" / "host-he_seal-bfv"
    holder = load_adapter(read_transcript(folder / "client-0-keys.bin")[0].parts[0])
    assert holder.has_secret_key
    secret = holder.secret_key_bytes()
    keys = read_transcript(folder / "aggregator-keys.bin")
    assert [m.kind for m in keys] == ["keys"]
    aggregator_view = load_adapter(keys[0].parts[0])
    assert not aggregator_view.has_secret_key and aggregator_view.info().encryption == "none"
    received = b"".join(p.read_bytes() for p in folder.glob("aggregator*.bin"))
    raw_key = zstandard.ZstdDecompressor().decompress(secret[16:], max_output_size=1 << 24)[96:]  # s itself
    windows = [key[i : i + 24] for key in (secret[16:], raw_key) for i in range(0, len(key) - 24, len(key) // 8)]
    assert received and secret not in received and not any(w in received for w in windows)
    assert secret in (folder / "client-0-keys.bin").read_bytes()  # the scan finds the key where it does travel


def test_offload_engines_encrypt_seeded_and_decrypt_within_precision(run):
    records = _records(run)
    precision = next(r for r in records if r["kind"] == "keygen" and r["config"] == LABEL)["info"]["precision"]
    rows = {r.config: r.to_json() for r in summarize_run(read_records(run / "results.jsonl").records)}
    host_he, offload = rows[LABEL], rows["offload/seal-bfv"]
    assert offload["rounds_done"] == 2 and 0 < offload["max_abs_error"] <= precision
    # the engines hold the secret key: their uploads are seeded, as small as the host-he clients'
    assert offload["upload_bytes_per_client_round"] == pytest.approx(host_he["upload_bytes_per_client_round"], rel=0.05)
