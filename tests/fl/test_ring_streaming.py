"""secagg's masked uploads and secret sharing's shares stream chunk by chunk: masks drawn per chunk equal the whole
mask, and a chunked round sums to exactly what an unchunked one does (bit for bit in the ring)."""

from __future__ import annotations

import base64
import os
import secrets
import threading
from collections import deque

import numpy as np
import pytest
from flwr.common.secure_aggregation.secaggplus_utils import pseudo_rand_gen

from hebench.fl.link import DirectLink
from hebench.fl.meter import PhaseMeter
from hebench.fl.ring_stream import RingTotal, StreamedAggregate, receive_streams
from hebench.fl.roster import make_identities
from hebench.fl.streams import send_aggregate
from hebench.net.transport import Message, accept, connect, listen
from hebench.protections.secagg import client as secagg_client
from hebench.protections.secagg.client import SecAggClientRound
from hebench.protections.secagg.mask_prg import MASK_GENERATORS, mask_stream
from hebench.protections.secagg.params import SecAggParams
from hebench.protections.secagg.server import Unrecoverable, collect_secagg
from hebench.protections.sharing.holder import send_share_sum
from hebench.protections.sharing.link import ShareLink
from hebench.protections.sharing.params import SecretSharingParams
from hebench.protections.sharing.ring_shares import combine, decode, encode

WHOLE = 10**6  # values per chunk: every vector here in one chunk


@pytest.mark.parametrize("prg", ["full-key", "flwr-32bit"])
@pytest.mark.parametrize("modulus", [2**32, 1000003, 2**40])
def test_a_mask_drawn_chunk_by_chunk_equals_the_whole_mask(prg, modulus):
    key = base64.urlsafe_b64encode(os.urandom(32))
    stream = mask_stream(prg, key, modulus)
    drawn = np.concatenate([stream.take(n) for n in (1, 7, 300, 0, 192, 1)])
    np.testing.assert_array_equal(drawn, MASK_GENERATORS[prg](key, modulus, 501))
    if prg == "flwr-32bit":  # still flwr 1.41's generator, value for value
        np.testing.assert_array_equal(drawn, pseudo_rand_gen(key, modulus, [(501,)])[0].astype(np.uint64))


def _nearest(vector: np.ndarray, weight: float, params: SecAggParams) -> np.ndarray:
    """Deterministic quantisation (the stochastic one draws from numpy's global generator, shared by threads)."""
    c, q = params.clipping_range, params.quantization_range
    scaled = np.clip(np.asarray(vector, np.float64) * weight, -c, c)
    return np.rint((scaled + c) * q / (2 * c)).astype(np.uint64)


class _Drops(SecAggClientRound):
    def masked_upload(self, vector: np.ndarray) -> None:
        self.channel.close()
        raise SystemExit


class _DiesMidUpload(SecAggClientRound):
    """Sends the first chunk of its masked upload, then its connection closes."""

    def masked_upload(self, vector: np.ndarray) -> None:
        self.channel.send(Message("sa_masked_chunk", {"offset": 0, "values": len(vector)}, (b"\0" * 4 * 37,)))
        self.channel.close()
        raise SystemExit


def _secagg_total(params: SecAggParams, vectors: dict, samples: dict, chunk_values: int, drop: set[int]):
    key = secrets.token_bytes(32)
    door = listen(key)
    errors: list[BaseException] = []
    identities = make_identities(max(vectors) + 1)  # the trusted set-up (secagg's active model signs with them)

    def client(i: int) -> None:
        try:
            ch = connect(door.address, key, "aggregator", 30)
            ch.send(Message("hello", {"client": i}))
            kind = _DiesMidUpload if -i - 1 in drop else _Drops if i in drop else SecAggClientRound
            kind(i, ch, params, PhaseMeter(), chunk_values=chunk_values, identity=identities[i]).run(
                vectors[i], samples[i], {}
            )
        except SystemExit:
            pass
        except BaseException as err:
            errors.append(err)

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in vectors]
    for t in threads:
        t.start()
    channels = {}
    for _ in vectors:
        ch = accept(door, "client", 30)
        channels[int(ch.recv("hello").meta["client"])] = ch
    try:
        result = collect_secagg(channels, params, PhaseMeter(), chunk_values)
    finally:  # every client has sent its last message by now (or is waiting for an aggregate that never comes)
        for ch in channels.values():
            ch.close()
        for t in threads:
            t.join(30)
        door.close()
    assert not errors, errors
    return result


@pytest.mark.parametrize("prg", ["full-key", "flwr-32bit"])
@pytest.mark.parametrize("drop", [set(), {2}])
def test_a_chunked_secagg_round_sums_exactly_the_quantised_updates_as_an_unchunked_one(monkeypatch, prg, drop):
    """Chunks of 37 values: every mask is drawn per chunk at its offset on both sides; a dropped client's pairwise
    masks are rebuilt per chunk. The unmasked ring sum is the survivors' quantised sum mod M, value for value."""
    monkeypatch.setattr(secagg_client, "quantize_weighted", _nearest)
    params = SecAggParams(num_shares=5, reconstruction_threshold=3, prg=prg)
    rng = np.random.default_rng(3)
    vectors = {i: rng.normal(0, 1, 1000).astype(np.float32) for i in range(5)}
    samples = {i: 10 + i for i in range(5)}
    weights = {i: s / sum(samples.values()) for i, s in samples.items()}
    survivors = [i for i in vectors if i not in drop]
    expected = sum(_nearest(vectors[i], weights[i], params) for i in survivors) % np.uint64(params.modulus)
    chunked = _secagg_total(params, vectors, samples, 37, drop)
    whole = _secagg_total(params, vectors, samples, WHOLE, drop)
    assert chunked.survivors == whole.survivors == tuple(survivors)
    np.testing.assert_array_equal(chunked.total.values, expected)
    np.testing.assert_array_equal(whole.total.values, expected)
    np.testing.assert_array_equal(chunked.average, whole.average)
    assert chunked.update_bytes == {i: 4 * 1000 for i in survivors}  # uint32 words, every chunk counted


def test_a_secagg_client_lost_in_the_middle_of_its_masked_upload_fails_the_round_not_the_run():
    """Its first chunk is in the running sum and cannot be taken out: the round is unrecoverable (skipped by the
    aggregator with this reason), after the survivors answered the unmask stage as for any dropout."""
    params = SecAggParams(num_shares=5, reconstruction_threshold=3)
    vectors = {i: np.zeros(100, np.float32) for i in range(5)}
    with pytest.raises(Unrecoverable, match="middle of its masked upload") as caught:
        _secagg_total(params, vectors, dict.fromkeys(vectors, 10), 37, {-2})  # client 1 dies mid-upload
    assert caught.value.left.get(1) == "lost"


class _Queue:
    """A channel stand-in: what is sent is what is received, in order."""

    def __init__(self, peer: str) -> None:
        self.peer, self.box, self.sent = peer, deque(), 0

    def send(self, msg: Message) -> int:
        self.box.append(msg)
        self.sent += 1
        return 0

    def recv(self, expect: str | None = None) -> Message:
        msg = self.box.popleft()
        assert expect is None or msg.kind == expect, (msg.kind, expect)
        return msg


def _share_round(vectors: dict, samples: dict, params: SecretSharingParams, chunk_values: int):
    """Two clients' shares streamed to 3 aggregators, summed there, streamed back; the first client's rebuilt FedAvg,
    the aggregators' sums combined and the messages each upload took."""
    aggregators = 1 + params.extra_aggregators
    up = {i: [_Queue(f"aggregator {k}") for k in range(aggregators)] for i in vectors}
    for i, vector in vectors.items():
        link = ShareLink(DirectLink(up[i][0], None, chunk_values), up[i][1:], params)  # type: ignore[arg-type]
        link.rng = np.random.default_rng(i)
        link.upload({"round": 0, "samples": samples[i]}, [vector], None, PhaseMeter())
    totals = []
    for k in range(aggregators):
        total = RingTotal()
        end = "update" if k == 0 else "share"
        got = receive_streams({i: up[i][k] for i in vectors}, "share_chunk", end, total, _words, PhaseMeter())
        assert set(got.ends) == set(vectors)
        totals.append(total)
    down = [_Queue("aggregator 0"), *(_Queue(f"aggregator {k}") for k in range(1, aggregators))]
    meta = {"round": 0, "epoch": 0, "weights": {}, "samples_total": sum(samples.values())}
    streamed = StreamedAggregate(len(totals[0]), chunk_values, lambda a, b: totals[0].values[a:b].tobytes())
    send_aggregate([down[0]], streamed, "aggregate", meta, PhaseMeter())  # type: ignore[list-item]
    for k in range(1, aggregators):
        send_share_sum([down[k]], totals[k], {"round": 0, "aggregator": k}, chunk_values)  # type: ignore[list-item]
    reader = ShareLink(DirectLink(down[0], None, chunk_values), down[1:], params)  # type: ignore[arg-type]
    opened = reader.open(down[0].recv(), 0, PhaseMeter())
    return opened.encrypted, combine([t.values for t in totals]), up[0][0].sent


def _words(blob: bytes) -> np.ndarray:
    return np.frombuffer(blob, dtype=np.uint64)


def test_chunked_secret_shares_sum_and_rebuild_exactly_as_whole_ones():
    """Chunks of 37 values each way: the aggregators' sums add up to the encoded FedAvg numerator bit for bit, and
    the client rebuilds the same float32 FedAvg chunk by chunk as from one whole chunk."""
    params = SecretSharingParams(aggregators=3)
    rng = np.random.default_rng(4)
    vectors = {i: rng.normal(0, 0.3, 1000).astype(np.float32) for i in range(2)}
    samples = {0: 7, 1: 12}
    expected = sum(encode(vectors[i], samples[i], params, np.random.default_rng(i)) for i in vectors)
    chunked, chunked_sum, messages = _share_round(vectors, samples, params, 37)
    whole, whole_sum, one = _share_round(vectors, samples, params, WHOLE)
    np.testing.assert_array_equal(chunked_sum, expected)
    np.testing.assert_array_equal(whole_sum, expected)
    np.testing.assert_array_equal(chunked, whole)
    np.testing.assert_array_equal(chunked, decode(expected, 19, params).astype(np.float32))
    assert (messages, one) == (29, 2)  # 28 chunks (27 of 37 values, one of 1) + the end message, against 1 + 1
