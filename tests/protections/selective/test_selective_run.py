"""A selective host-he run: agreed masks, ciphertext + plaintext parts on the wire, same model as raw."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hebench.analysis.summary import summarize_run
from hebench.config import parse_suite
from hebench.fl.streams import whole_updates
from hebench.net.transport import read_transcript
from hebench.protections.selective.split import PLAIN
from hebench.results import read_records
from hebench.runtime.runner import Runner
from tests.conftest import INSTALLED

pytestmark = [pytest.mark.slow, pytest.mark.skipif("tenseal-ckks" not in INSTALLED, reason="TenSEAL not installed")]
SUITE = {
    "name": "sel",
    "data": {"dataset": "digits", "clients": 2},
    "model": {"name": "mlp", "hidden": 4},
    "training": {"rounds": 1, "lr": 0.1},
    "configurations": [
        {"mode": "raw"},
        {"mode": "host-he", "adapter": "tenseal-ckks", "selective": {"mask": "sensitivity", "ratio": 0.2}},
    ],
    "measure": {"transcripts": True, "timeout_s": 120},
}
LABEL = "host-he/tenseal-ckks/sel-sensitivity-0.2"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("sel")
    Runner(parse_suite(json.loads(json.dumps(SUITE))), out).run()
    return out


def test_clients_agree_on_one_mask_of_the_right_size(run):
    agreed = [r.to_json() for r in read_records(run / "results.jsonl", kind="mask_agreement").records]
    agreed = [r for r in agreed if r["role"] == "client"]
    assert len(agreed) == 2 and len({r["mask_sha256"] for r in agreed}) == 1
    mask = np.load(run / "masks" / "host-he_tenseal-ckks_sel-sensitivity-0.2.npy")
    assert mask.mean() == pytest.approx(0.2, abs=1e-3) and agreed[0]["encrypted_fraction"] == pytest.approx(mask.mean())


def test_wire_carries_masked_coordinates_encrypted_and_the_rest_in_plaintext(run):
    mask = np.load(run / "masks" / "host-he_tenseal-ckks_sel-sensitivity-0.2.npy")
    folder = run / "transcripts" / "host-he_tenseal-ckks_sel-sensitivity-0.2"
    updates = [m for p in folder.glob("aggregator-from-client-*.bin") for m in whole_updates(read_transcript(p))]
    rounds = [m for m in updates if m.meta["round"] == 0]
    assert len(rounds) == 2
    for msg in rounds:
        assert msg.meta["plain_parts"] == 1
        *cipher, plain = msg.parts
        assert all(json.loads(c[8 : 8 + int.from_bytes(c[4:8], "big")])["adapter"] == "tenseal-ckks" for c in cipher)
        assert PLAIN.deserialize(plain).length == int((~mask).sum())


def test_selective_trains_the_same_model_as_raw(run):
    rows = {r.config: r.to_json() for r in summarize_run(read_records(run / "results.jsonl").records)}
    assert rows[LABEL]["accuracy"] == pytest.approx(rows["raw"]["accuracy"], abs=1e-6)
    assert rows["raw"]["upload_bytes_per_client_round"] < rows[LABEL]["upload_bytes_per_client_round"]
