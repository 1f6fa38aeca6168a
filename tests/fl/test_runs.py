"""End-to-end federated runs: correctness against raw, and the security invariants as scans."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hebench.analysis.summary import summarize_run
from hebench.config import parse_suite
from hebench.crypto import load_adapter
from hebench.crypto.base import CIPHERTEXT_MAGIC
from hebench.fl.streams import whole_updates
from hebench.net.transport import read_transcript
from hebench.results import read_records
from hebench.runtime.runner import Runner
from tests.conftest import INSTALLED

pytestmark = pytest.mark.slow  # end-to-end federated runs

HE = [a for a in ("tenseal-ckks", "paillier") if a in INSTALLED]
SUITE = {
    "name": "e2e",
    "seed": 3,
    "data": {"dataset": "digits", "clients": 3},
    "model": {"name": "mlp", "hidden": 4},
    "training": {"rounds": 2, "lr": 0.1, "clients_per_round": 2},
    "configurations": [
        {"mode": "raw"},
        *(
            {"name": f"host-he/{a}", "mode": "host-he", "adapter": a, "params": {"key_bits": 2048}}
            if a == "paillier"
            else {"mode": "host-he", "adapter": a}
            for a in HE
        ),
        {"mode": "host-he", "adapter": "tenseal-ckks", "packing": "per-layer"},
    ],
    "measure": {"transcripts": True},
}


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("e2e")
    Runner(parse_suite(json.loads(json.dumps(SUITE))), out).run()
    return out


def rows(run: Path) -> dict[str, dict]:
    return {r.config: r.to_json() for r in summarize_run(read_records(run / "results.jsonl").records)}


def test_every_configuration_completes_and_host_he_matches_raw(run):
    table = rows(run)
    assert set(table) == {"raw", *(f"host-he/{a}" for a in HE), "host-he/tenseal-ckks/per-layer"}
    raw = table["raw"]
    for label, row in table.items():
        assert row["rounds_done"] == 2
        assert row["accuracy"] == pytest.approx(raw["accuracy"], abs=0.02), label
        assert row["max_abs_error"] < 1e-4, label


def test_records_are_per_party_per_phase(run):
    records = [r.to_json() for r in read_records(run / "results.jsonl").records]
    client_rounds = [r for r in records if r["kind"] == "party_round" and r["role"] == "client"]
    trained = [r for r in client_rounds if "train" in r["phases"]]
    assert trained and all({"train", "encrypt", "serialize", "send"} <= set(r["phases"]) for r in trained)
    assert all(r["phases"]["train"]["cpu_s"] > 0 and r["bytes_sent"] > 0 and r["peak_rss_bytes"] > 0 for r in trained)
    assert all("aggregate" in r["phases"] for r in records if r["kind"] == "party_round" and r["role"] == "aggregator")
    run_rec = next(r for r in records if r["kind"] == "run")
    assert len(run_rec["suite_hash"]) == 64 and "cpu_model" in run_rec["environment"]
    # clients_per_round=2 of 3: one client per round only decrypts
    assert sum("train" not in r["phases"] for r in client_rounds) == 2 * len(rows(run))


def test_per_layer_packing_costs_more_bytes_than_flat(run):
    table = rows(run)
    flat, per_layer = table["host-he/tenseal-ckks"], table["host-he/tenseal-ckks/per-layer"]
    assert per_layer["upload_bytes_per_client_round"] > flat["upload_bytes_per_client_round"]


def _secret_key(run: Path, label: str) -> bytes:
    keys = read_transcript(run / "transcripts" / label / "client-0-keys.bin")
    adapter = load_adapter(keys[0].parts[0])
    assert adapter.has_secret_key
    return adapter.secret_key_bytes()


@pytest.mark.parametrize("adapter", HE)
def test_aggregator_never_receives_secret_key_bytes(run, adapter):
    label = f"host-he_{adapter}"
    secret = _secret_key(run, label)
    folder = run / "transcripts" / label
    assert [m.kind for m in read_transcript(folder / "aggregator-keys.bin")] == ["keys"]
    received = b"".join(p.read_bytes() for p in folder.glob("aggregator*.bin"))
    windows = [secret[i : i + 32] for i in range(0, len(secret) - 32, max(len(secret) // 8, 1))]
    assert received and secret not in received and not any(w in received for w in windows)
    assert secret in (folder / "client-0-keys.bin").read_bytes()  # the scan finds the key where it does travel


@pytest.mark.parametrize("adapter", HE)
def test_host_he_sends_only_ciphertext_updates(run, adapter):
    label = f"host-he_{adapter}"
    updates = [
        m
        for p in (run / "transcripts" / label).glob("aggregator-from-client-*.bin")
        for m in whole_updates(read_transcript(p))
    ]
    assert len(updates) == 2 * 2  # 2 rounds x 2 clients per round
    for msg in updates:
        for part in msg.parts:
            assert part.startswith(CIPHERTEXT_MAGIC)
            header = json.loads(part[8 : 8 + int.from_bytes(part[4:8], "big")])
            assert header["adapter"] == adapter


def test_raw_mode_does_send_plaintext(run):
    """The scan above can fail: in raw mode the same check finds plain updates."""
    folder = run / "transcripts" / "raw"
    msgs = [m for p in folder.glob("aggregator-from-client-*.bin") for m in whole_updates(read_transcript(p))]
    headers = [json.loads(p[8 : 8 + int.from_bytes(p[4:8], "big")]) for m in msgs for p in m.parts]
    assert headers and all(h["adapter"] == "plain" for h in headers)
