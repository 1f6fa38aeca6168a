"""Secret sharing with a client lost between its shares: the aggregators' sums then hold different clients, and
the clients must notice (each sum names whom it holds) and skip the round rather than rebuild a wrong FedAvg.
Driven on in-memory channels; the end-to-end kill is in tests/faults/test_lost_clients.py."""

from __future__ import annotations

from collections import deque

import numpy as np
import pytest

from hebench.fl.link import DirectLink
from hebench.fl.meter import PhaseMeter
from hebench.fl.ring_stream import RingTotal, StreamedAggregate
from hebench.fl.streams import send_aggregate
from hebench.net.transport import Message
from hebench.protections.sharing.holder import send_share_sum
from hebench.protections.sharing.link import ShareLink
from hebench.protections.sharing.params import SecretSharingParams
from hebench.protections.sharing.ring_shares import encode, split

PARAMS = SecretSharingParams(aggregators=2)


class _Queue:
    """A channel stand-in: what is sent is what is received, in order."""

    def __init__(self, peer: str) -> None:
        self.peer, self.box = peer, deque()

    def send(self, msg: Message) -> int:
        self.box.append(msg)
        return 0

    def recv(self, expect: str | None = None) -> Message:
        msg = self.box.popleft()
        assert expect is None or msg.kind == expect, (msg.kind, expect)
        return msg


def _open(coordinator_holds: list[int], holder_end: dict) -> tuple:
    """Clients 0 and 1's shares summed: the coordinator's sum over ``coordinator_holds``, the holder's over both
    (its end message ``holder_end``); what client 0 opens."""
    rng = np.random.default_rng(3)
    vectors = {i: rng.normal(0, 0.3, 50).astype(np.float32) for i in (0, 1)}
    shares = {i: split(encode(v, 10, PARAMS, np.random.default_rng(i)), 2) for i, v in vectors.items()}
    first = RingTotal()
    for i in coordinator_holds:
        first.add(0, 50, shares[i][0])
    second = RingTotal()
    for i in (0, 1):
        second.add(0, 50, shares[i][1])
    down, holder = _Queue("aggregator 0"), _Queue("aggregator 1")
    meta = {"round": 0, "epoch": 0, "weights": {"0": 1.0}, "samples_total": 10 * len(coordinator_holds)}
    meta["summed"] = coordinator_holds
    streamed = StreamedAggregate(50, 20, lambda a, b: first.values[a:b].tobytes())  # type: ignore[index]
    send_aggregate([down], streamed, "aggregate", meta, PhaseMeter())  # type: ignore[list-item]
    send_share_sum([holder], second, {"round": 0, "aggregator": 1}, 20, holder_end)  # type: ignore[list-item]
    reader = ShareLink(DirectLink(down, None, 20), [holder], PARAMS)  # type: ignore[arg-type]
    return reader.open(down.recv(), 0, PhaseMeter()), vectors


def test_a_client_in_one_sum_and_not_another_makes_the_clients_skip_the_round_with_the_reason():
    """Client 1 was killed after its share reached the holder but before its end reached the coordinator."""
    opened, _ = _open([0], {"summed": [0, 1], "spoiled_by": None})
    assert opened.skipped and opened.weights == {}
    assert "aggregator 1's sum holds clients [0, 1], the coordinator's [0]" in (opened.failed or "")


def test_a_sum_spoiled_by_a_client_lost_mid_stream_makes_the_clients_skip_the_round():
    opened, _ = _open([0], {"summed": [0], "spoiled_by": 1})
    assert opened.skipped and "part of client 1's share" in (opened.failed or "")


def test_sums_holding_the_same_clients_rebuild_their_fedavg():
    opened, vectors = _open([0, 1], {"summed": [0, 1], "spoiled_by": None})
    assert not opened.skipped and opened.failed is None
    want = (vectors[0].astype(np.float64) + vectors[1]) / 2
    assert np.abs(opened.encrypted - want).max() == pytest.approx(0, abs=2 * 8 / 2**23)
