"""Updates on Flower travel as one Array per streamed chunk, and nothing bounds an update by a frame.

A chunked update sums to the same aggregate as a whole one; message sizes are counted without a
second copy of the update; the hub takes an oracle vector larger than the frame limit in slices.
"""

from __future__ import annotations

import numpy as np
import pytest

from hebench.crypto import create_adapter
from hebench.fl.chunks import values_per_chunk
from hebench.fl.cipher import KeyHolderCipher
from hebench.fl.meter import PhaseMeter
from hebench.net.limits import ENV_MAX_FRAME, PREAUTH_MAX_FRAME
from tests.conftest import INSTALLED

pytest.importorskip("flwr", reason="the hebench[flower] extra is not installed")

from flwr.app import ConfigRecord, MetricRecord, RecordDict
from flwr.common.serde import recorddict_to_proto

from hebench.runtime.flower.codec import model_record, payload_bytes, update_parts, update_record
from tests.runtime.flower.test_flower_parts import FakeHub, FlowerPlan, RunningHub, suite

needs_tenseal = pytest.mark.skipif("tenseal-ckks" not in INSTALLED, reason="TenSEAL not installed")


def test_payload_bytes_count_the_protobuf_size_without_serialising_the_update():
    contents = [
        RecordDict(
            {
                "arrays": update_record((b"a" * 10, b"b" * 300, b""), (b"p" * 5,)),
                "metrics": MetricRecord({"num-examples": 3, "train-loss": 0.25}),
                "config": ConfigRecord({"round": 2, "digest": "ab" * 32}),
            }
        ),
        RecordDict({"arrays": update_record((b"x" * 200_000,) * 3, ())}),  # lengths with 3-byte varints
        RecordDict({"arrays": model_record(np.ones(1000, np.float32)), "config": ConfigRecord({"x": "y"})}),
        RecordDict({"arrays": update_record((), ())}),
    ]
    for content in contents:
        assert payload_bytes(content) == recorddict_to_proto(content).ByteSize()


def _replies(keys, vectors: dict[int, tuple[np.ndarray, int]], chunk_values: int | None):
    """Train replies whose updates are one Array per chunk (or one Array when ``chunk_values`` is None)."""
    from flwr.app import Message

    cipher = KeyHolderCipher(lambda epoch: keys, require_secret=True)
    replies = []
    for client, (vector, samples) in vectors.items():
        if chunk_values is None:
            blobs = cipher.encrypt([vector], 0, PhaseMeter())
        else:
            blobs = tuple(cipher.encrypt_stream([vector], 0, PhaseMeter(), chunk_values))
        asked = Message(RecordDict(), dst_node_id=client + 1, message_type="train")
        metrics = MetricRecord({"num-examples": samples, "hebench-client": client, "train-loss": 0.5})
        replies.append(Message(RecordDict({"arrays": update_record(blobs, ()), "metrics": metrics}), reply_to=asked))
    return replies, len(blobs)


@needs_tenseal
def test_a_chunked_update_aggregates_on_flower_to_the_unchunked_aggregate(tmp_path, monkeypatch):
    from flwr.supercore.task_identity import TaskIdentity

    from hebench.runtime.flower.strategy import HEFedAvg

    for field in ("_run_id", "_node_id", "_task_id"):  # what a ServerApp process has set
        monkeypatch.setattr(TaskIdentity, field, 1)
    keys = create_adapter("tenseal-ckks", {})
    keys.keygen()
    per_chunk = values_per_chunk(keys, 1)  # one ciphertext per chunk
    rng = np.random.default_rng(3)
    vectors = {i: (rng.normal(size=2 * per_chunk + 17).astype(np.float32), n) for i, n in ((0, 30), (1, 10), (2, 5))}
    aggregates = []
    for chunk_values in (None, per_chunk):
        plan = FlowerPlan(suite(), 0, "run-1", ("127.0.0.1", 1), ("127.0.0.1", 2), str(tmp_path))
        strategy = HEFedAvg(plan, FakeHub(keys.export_keys(secret=False)))  # type: ignore[arg-type]
        replies, arrays = _replies(keys, vectors, chunk_values)
        assert arrays == (1 if chunk_values is None else 3)
        strategy.samples = {i: n for i, (_, n) in vectors.items()}
        aggregate = strategy.aggregate_replies(1, sorted(vectors), iter(replies))
        assert aggregate is not None
        blobs, clear = update_parts(aggregate)
        assert len(blobs) == arrays and clear == ()  # the aggregate goes back chunk by chunk too
        aggregates.append(np.concatenate([keys.decrypt(keys.deserialize(b)) for b in blobs]))
    expected = sum(v * n for v, n in vectors.values()) / sum(n for _, n in vectors.values())
    assert np.allclose(aggregates[1], aggregates[0], atol=1e-6)
    assert np.allclose(aggregates[1], expected, atol=1e-5)


@needs_tenseal
def test_the_hub_takes_an_oracle_vector_larger_than_the_frame_limit(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_MAX_FRAME, str(PREAUTH_MAX_FRAME))  # 64 KiB frames; the vector is 400 kB
    hub = RunningHub(tmp_path, "host-he")
    client = hub.link("client", hub.client_key)
    vector = np.arange(100_000, dtype=np.float32)
    client.records([{"kind": "oracle_update", "client": 0, "round": 1, "vector": vector}])
    got = hub.records.get(timeout=10)
    assert got["kind"] == "oracle_update" and got["round"] == 1
    assert np.array_equal(got["vector"], vector)
