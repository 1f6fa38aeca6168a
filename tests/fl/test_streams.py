"""Streaming: a chunked update aggregates to what the unchunked one does, in every adapter a mode streams."""

from __future__ import annotations

from collections import deque

import numpy as np
import pytest

from hebench.crypto import create_adapter, load_adapter
from hebench.crypto.exact_weights import pre_weights
from hebench.errors import PartyError
from hebench.fl.chunks import chunks_of, values_per_chunk
from hebench.fl.cipher import KeyHolderCipher
from hebench.fl.fedavg import fedavg_weights
from hebench.fl.meter import PhaseMeter
from hebench.fl.running_sum import RunningSum
from hebench.fl.streams import read_aggregate, receive_uploads, send_aggregate
from hebench.net.transport import Message
from hebench.protections.selective.split import PLAIN
from tests.conftest import INSTALLED

SAMPLES = {0: 3, 1: 5, 2: 8}  # unequal: total 16
CASES = [
    ("plain", {}, False),
    ("tenseal-ckks", {}, False),
    ("seal-bfv", {"bits": 16, "clip": 1.0, "max_summands": 3, "rounding": "nearest"}, True),
    ("seal-ckks", {"bits": 16, "clip": 1.0, "max_summands": 3}, True),
    ("paillier", {"key_bits": 2048}, False),
]
EXACT = {"plain", "seal-bfv", "paillier"}  # deterministic encodings and exact sums: bit for bit


class Pipe:
    """One direction of a channel, in memory."""

    def __init__(self, peer: str = "peer") -> None:
        self.peer, self.queue = peer, deque()

    def send(self, msg: Message) -> int:
        self.queue.append(msg)
        return 0

    def recv(self, expect: str | None = None) -> Message:
        msg = self.queue.popleft()
        assert expect is None or msg.kind == expect
        return msg


def _keys(name: str, params: dict):
    if name not in INSTALLED:
        pytest.skip(f"{name} is not installed")
    holder = create_adapter(name, params)
    holder.keygen()
    return holder, load_adapter(holder.export_keys(secret=False))


def _updates(n: int) -> dict[int, np.ndarray]:
    rng = np.random.default_rng(11)
    return {i: rng.uniform(-1, 1, n).astype(np.float32) for i in SAMPLES}


@pytest.mark.parametrize(("name", "params", "pre"), CASES, ids=[c[0] for c in CASES])
def test_a_chunked_update_aggregates_to_the_unchunked_result(name, params, pre):
    holder, public = _keys(name, params)
    n = 3 * holder.slots + 17 if name != "plain" else 5000  # several ciphertexts and a partial one
    xs = _updates(n)
    weights = fedavg_weights(SAMPLES)
    pw = pre_weights(SAMPLES, holder.levels) if pre else {}
    multipliers = {i: 1.0 for i in SAMPLES} if pre else None
    meter = PhaseMeter()

    whole = RunningSum(public, weights, multipliers)
    for i, x in xs.items():
        whole.add(i, ({}, (holder.serialize(holder.encrypt(x, pw.get(i))),)))
    (blob,), _ = whole.blobs()
    unchunked = holder.decrypt(public.deserialize(blob)).astype(np.float32)

    cipher = KeyHolderCipher(lambda epoch: holder, require_secret=True)
    streamed = RunningSum(public, weights, multipliers)
    per_chunk = holder.slots + 5  # rounded down to whole ciphertexts: one each
    for i, x in xs.items():
        for piece in cipher.encrypt_stream([x], 0, meter, per_chunk, pw.get(i)):
            streamed.add_chunk(i, piece)
        streamed.finish(i)
    pipe = Pipe()
    send_aggregate([pipe], streamed, "aggregate", {"round": 0, "epoch": 0, "weights": {}}, meter)
    assert len(pipe.queue) == -(-n // values_per_chunk(holder, per_chunk)) + 1  # one frame per chunk, then the end
    first = pipe.recv()
    opened = lambda blob: holder.decrypt(holder.deserialize(blob))  # noqa: E731
    chunked, plain, end = read_aggregate(
        pipe, first, "aggregate", ("aggregate_chunk", "aggregate_plain"), opened, meter
    )

    assert end.meta["streamed"] and len(plain) == 0 and len(chunked) == n
    if name in EXACT:
        np.testing.assert_array_equal(chunked, unchunked)
    else:
        np.testing.assert_allclose(chunked, unchunked, atol=2 * holder.info().precision)
    want = sum(weights[i] * xs[i].astype(np.float64) for i in SAMPLES)
    assert np.abs(chunked - want).max() <= holder.info().precision + 1e-6


def test_the_aggregator_reads_uploads_in_lockstep_and_sums_each_chunk_in_client_order():
    public = create_adapter("plain")
    xs = _updates(10)
    channels = {i: Pipe(f"client {i}") for i in SAMPLES}
    for i, x in xs.items():
        for chunk in chunks_of([x], 4):
            channels[i].send(Message("update_chunk", {"round": 0}, (PLAIN.serialize(PLAIN.encrypt(chunk)),)))
        channels[i].send(Message("plain_part", {"round": 0}, (PLAIN.serialize(PLAIN.encrypt(x[:2])),)))
        channels[i].send(Message("update_end", {"round": 0, "samples": SAMPLES[i]}))
    total = RunningSum(public, fedavg_weights(SAMPLES))
    seen = []
    receive_uploads(channels, total, PhaseMeter(), lambda i, meta: seen.append((i, meta["samples"])))
    assert seen == [(0, 3), (1, 5), (2, 8)] and all(not ch.queue for ch in channels.values())
    chunks = list(total.stream())
    assert [(c.plain, c.offset, c.length, c.total) for c in chunks] == [
        (False, 0, 4, 10),
        (False, 4, 4, 10),
        (False, 8, 2, 10),
        (True, 0, 2, 2),
    ]
    assert set(total.update_bytes) == set(SAMPLES) and total.update_bytes[0] > 0


def test_an_update_with_a_different_number_of_chunks_is_refused():
    public = create_adapter("plain")
    total = RunningSum(public, fedavg_weights({0: 1, 1: 1}))
    blob = PLAIN.serialize(PLAIN.encrypt(np.ones(4)))
    total.add_chunk(0, blob)
    total.add_chunk(0, blob)
    total.finish(0)
    total.add_chunk(1, blob)
    with pytest.raises(PartyError, match="client 1 sent 1 ciphertext and 0 plaintext chunks, others 2 and 0"):
        total.finish(1)


def test_a_chunk_that_does_not_fit_its_part_is_refused():
    pipe = Pipe()
    blob = PLAIN.serialize(PLAIN.encrypt(np.ones(4)))
    pipe.send(Message("aggregate", {"weights": {}}))
    first = Message("aggregate_chunk", {"round": 0, "epoch": 0, "offset": 8, "values": 10}, (blob,))
    with pytest.raises(PartyError, match="does not fit a part of 10"):
        opened = lambda b: PLAIN.decrypt(PLAIN.deserialize(b))  # noqa: E731
        read_aggregate(pipe, first, "aggregate", ("aggregate_chunk", "aggregate_plain"), opened, PhaseMeter())


def test_a_chunk_is_held_serialised_once_every_client_has_added_to_it():
    public = create_adapter("plain")
    total = RunningSum(public, fedavg_weights({0: 1, 1: 3}))
    blob = PLAIN.serialize(PLAIN.encrypt(np.ones(4)))
    total.add_chunk(0, blob)
    total.add_chunk(0, blob)
    total.add_chunk(1, blob)  # chunk 0 complete, chunk 1 waits for client 1
    sums = total._cipher.sums
    assert isinstance(sums[0], bytes) and not isinstance(sums[1], bytes)  # bytes: float32, not the float64 sum
    assert PLAIN.deserialize(sums[0]).length == 4
