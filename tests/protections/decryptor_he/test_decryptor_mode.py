"""decryptor-he end to end: no client holds a secret key, only the decryptor does; the aggregator sees
ciphertext in and a sealed aggregate back; the model trained is host-he's."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from hebench.analysis.summary import summarize_run
from hebench.config import parse_suite
from hebench.crypto import load_adapter
from hebench.crypto.base import CIPHERTEXT_MAGIC
from hebench.fl.streams import whole_updates
from hebench.net.transport import read_transcript
from hebench.protections.decryptor_he.decryptor import open_sealed
from hebench.results import read_records
from hebench.runtime.runner import Runner
from tests.conftest import INSTALLED

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif("tenseal-ckks" not in INSTALLED, reason="TenSEAL not installed"),
]

SUITE = {
    "name": "decryptor",
    "seed": 5,
    "data": {"dataset": "digits", "clients": 3},
    "model": {"name": "mlp", "hidden": 4},
    "training": {"rounds": 2, "lr": 0.1},
    "configurations": [
        {"mode": "host-he", "adapter": "tenseal-ckks"},
        {"mode": "decryptor-he", "adapter": "tenseal-ckks"},
    ],
    "measure": {"transcripts": True},
}
LABEL = "decryptor-he_tenseal-ckks"


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("decryptor")
    Runner(parse_suite(json.loads(json.dumps(SUITE))), out).run()
    return out


def _folder(run: Path) -> Path:
    return run / "transcripts" / LABEL


def _keys(path: Path) -> list:
    return [m for m in read_transcript(path) if m.kind == "keys"]


def test_decryptor_he_trains_the_same_model_as_host_he(run):
    rows = {r.config: r for r in summarize_run(read_records(run / "results.jsonl").records)}
    ours, host = rows["decryptor-he/tenseal-ckks"], rows["host-he/tenseal-ckks"]
    assert ours.rounds_done == host.rounds_done == 2
    assert ours.accuracy == pytest.approx(host.accuracy, abs=0.02)
    assert ours.max_abs_error < 1e-4
    decryptor = [r for r in read_records(run / "results.jsonl").records if getattr(r, "role", None) == "aggregator-1"]
    assert [r.round for r in decryptor if r.kind == "party_round"] == [0, 1]  # one aggregate a round
    assert all("decrypt" in r.phases for r in decryptor if r.kind == "party_round")


def test_the_aggregators_traffic_counts_its_channel_to_the_decryptor(run):
    records = read_records(run / "results.jsonl").records
    rounds = [r for r in records if r.kind == "party_round" and r.config == "decryptor-he/tenseal-ckks"]
    for r in range(2):
        agg = next(x for x in rounds if x.role == "aggregator" and x.round == r)
        decryptor = next(x for x in rounds if x.role == "aggregator-1" and x.round == r)
        assert agg.bytes_received >= sum(agg.update_bytes.values()) + decryptor.bytes_sent
        assert agg.bytes_sent >= decryptor.bytes_received


def test_only_the_decryptor_holds_the_secret_key(run):
    sets = _keys(_folder(run) / "aggregator-1-key-authority.bin")
    assert sets and all(load_adapter(m.parts[0]).has_secret_key for m in sets)


def test_a_colluding_clients_key_set_has_no_secret_key(run):
    folder = _folder(run)
    mine = load_adapter(_keys(folder / "client-0-keys.bin")[0].parts[0])
    assert not mine.has_secret_key
    victim = whole_updates(read_transcript(folder / "aggregator-from-client-1.bin"))[0]
    ciphertext = mine.deserialize(victim.parts[0])
    with pytest.raises(Exception):  # noqa: B017 - each library raises its own error for a missing secret key
        mine.decrypt(ciphertext)
    # control: the decryptor's set opens the same ciphertext
    secret = load_adapter(_keys(folder / "aggregator-1-key-authority.bin")[0].parts[0])
    values = secret.decrypt(secret.deserialize(victim.parts[0]))
    assert np.isfinite(values).all() and np.abs(values).max() > 0


def test_the_aggregator_sees_ciphertext_and_sealed_aggregates_only(run):
    folder = _folder(run)
    updates = [m for p in folder.glob("aggregator-from-client-*.bin") for m in whole_updates(read_transcript(p))]
    assert len(updates) == 2 * 3 and all(p.startswith(CIPHERTEXT_MAGIC) for m in updates for p in m.parts)
    answers = [m for m in read_transcript(folder / "aggregator-from-decryptor.bin") if m.kind == "decrypted"]
    assert len(answers) == 2
    own = [folder / "aggregator-keys.bin", *folder.glob("aggregator-from-*.bin")]  # not aggregator-1: the decryptor
    received = b"".join(p.read_bytes() for p in own)
    client_sets = _keys(folder / "client-0-keys.bin")
    seal = client_sets[0].parts[1]
    aggregate = open_sealed(answers[-1].parts[0], seal).astype("<f4").tobytes()
    secret = load_adapter(_keys(folder / "aggregator-1-key-authority.bin")[0].parts[0]).secret_key_bytes()
    assert aggregate[:64] not in received  # the plaintext aggregate never reaches the aggregator
    assert seal not in received and secret[:64] not in received
    # controls: the same scans find the aggregate where it is opened and the key where it travels
    assert aggregate[:64] in open_sealed(answers[-1].parts[0], seal).astype("<f4").tobytes()
    assert secret[:64] in (folder / "aggregator-1-key-authority.bin").read_bytes()
    assert seal in (folder / "client-0-keys.bin").read_bytes()
