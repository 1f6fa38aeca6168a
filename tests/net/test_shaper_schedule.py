"""The shaper's schedule, on a manual clock: deterministic, no timing thresholds."""

from __future__ import annotations

import threading
from multiprocessing import Pipe

import pytest

from hebench.links.plan import Link, PartyLink
from hebench.links.segments import HEADER, MSS, wire_bytes
from hebench.net.shaping.bucket import TokenBucket
from hebench.net.shaping.clock import ManualClock
from hebench.net.shaping.shaper import PartyShaper
from hebench.net.shaping.wire import STAMP, ShapedConnection

MBIT = 1e6 / 8


def shaper(clock: ManualClock, up: float | None = None, down: float | None = None, **link) -> PartyShaper:
    party = PartyLink("client-0", "client", Link("test", up_Bps=up, down_Bps=down, **link))
    return PartyShaper(party, clock=clock, seed=1)


def test_a_pure_pacer_sends_back_to_back_frames_exactly_at_the_rate():
    bucket = TokenBucket(1000.0)  # bytes per second
    assert bucket.reserve(500, 0.0) == (0.0, 0.5)
    assert bucket.reserve(500, 0.0) == (0.5, 1.0)  # queued behind the first
    assert bucket.reserve(100, 3.0) == (3.0, 3.1)  # idle time banks nothing without a burst


def test_a_burst_lets_idle_time_bank_tokens_up_to_its_size():
    bucket = TokenBucket(1000.0, burst_bytes=200)
    assert bucket.reserve(150, 10.0) == (10.0, 10.0)  # 200 banked bytes cover it
    _, finish = bucket.reserve(100, 10.0)
    assert finish == pytest.approx(10.05)  # 50 banked, 50 more at the rate


def test_no_rate_means_no_wait():
    assert TokenBucket(None).reserve(10**9, 2.0) == (2.0, 2.0)


def send(s: PartyShaper, nbytes: int) -> tuple[float, float]:
    """A frame through the sender's side: scheduled, written (instantly here), then held until it is out."""
    frame = s.send(nbytes)
    s.sent(frame)
    return frame.start, frame.lag


def test_a_link_carries_each_segments_headers_beside_the_payload():
    assert wire_bytes(MSS) == MSS + HEADER and wire_bytes(MSS + 1) == MSS + 1 + 2 * HEADER and wire_bytes(0) == 0


def test_sending_holds_the_sender_until_its_last_byte_leaves_the_uplink():
    clock = ManualClock(100.0)
    s = shaper(clock, up=8 * MBIT)  # 8 Mbit/s = 1 MB/s
    first, lag = send(s, 2_000_000)
    assert (first, lag) == (100.0, 0.0)
    assert clock.now() == pytest.approx(100.0 + wire_bytes(2_000_000) / 1e6)
    ledger = s.take()
    assert ledger["up_bytes"] == 2_000_000 and ledger["up_busy_s"] == pytest.approx(wire_bytes(2_000_000) / 1e6)
    assert ledger["transfer_s"] == pytest.approx(ledger["up_busy_s"]) and ledger["turns"] == 1
    assert s.take()["up_bytes"] == 0  # taken once


def test_two_channels_of_one_party_share_its_pipe():
    """The server's uplink to N clients is one pipe: N frames take N times as long."""
    clock = ManualClock()
    server = shaper(clock, up=8 * MBIT)
    for _ in range(3):
        send(server, 1_000_000)
    assert clock.now() == pytest.approx(3 * wire_bytes(1_000_000) / 1e6)


def test_a_frame_pipelines_through_uplink_and_downlink():
    """Receiver's downlink starts with the sender's first byte: the slower link decides, not their sum."""
    clock = ManualClock()
    receiver = shaper(clock, down=4 * MBIT)  # 0.5 MB/s
    receiver.receive(1_000_000, first_byte=0.0, last_byte=1.0, sender_lag=0.0)  # its uplink: 0 to 1 s
    assert clock.now() == pytest.approx(2 * wire_bytes(1_000_000) / 1e6)  # from t=0 at 0.5 MB/s, not 1 + 2
    fast = shaper(ManualClock(), down=80 * MBIT)
    fast.receive(1_000_000, first_byte=0.0, last_byte=1.0, sender_lag=0.0)
    assert fast.clock.now() == pytest.approx(1.0)  # the uplink was the bottleneck: delivered as it finished
    late = shaper(ManualClock(5.0), down=80 * MBIT)
    late.receive(1_000_000, first_byte=0.0, last_byte=1.0, sender_lag=0.0)
    assert late.clock.now() == 5.0 and late.take()["transfer_s"] == 0.0  # read long after: not held again


def test_delay_is_added_once_per_side_and_overlaps_the_next_transfer():
    clock = ManualClock()
    sender = shaper(clock, up=8 * MBIT, delay_s=0.05)
    frame = sender.send(100_000)
    sender.sent(frame)
    out = wire_bytes(100_000) / 1e6
    assert frame.lag == pytest.approx(0.05)
    assert clock.now() == pytest.approx(out)  # the sender is free again after its bytes, not after the delay
    receiver = shaper(clock, delay_s=0.02)
    receiver.receive(100_000, frame.start, frame.finish, frame.lag)
    assert clock.now() == pytest.approx(out + 0.05 + 0.02)


def test_frames_waiting_to_be_read_are_not_delayed_again():
    """Three clients' updates leave at once with 75 ms of latency; read one after another they are all due at
    75 ms, not 75, 150 and 225 ms (a receiver's reading order is not a network delay)."""
    clock = ManualClock()
    aggregator = shaper(clock)
    for _ in range(3):
        aggregator.receive(1000, first_byte=0.0, last_byte=0.0, sender_lag=0.075)
    assert clock.now() == pytest.approx(0.075)


def test_jitter_is_seeded_and_within_its_bounds():
    lags = []
    for _ in range(2):
        s = shaper(ManualClock(), delay_s=0.05, jitter_s=0.01)
        lags.append([send(s, 100)[1] for _ in range(50)])
    assert lags[0] == lags[1]  # same seed, same party: same draws
    assert all(0.04 <= x <= 0.06 for x in lags[0]) and len(set(lags[0])) > 1


def test_loss_resends_segments_and_costs_a_round_trip_each():
    clock = ManualClock()
    s = shaper(clock, up=8 * MBIT, delay_s=0.01, loss=0.1)
    _, lag = send(s, 1_000_000)
    ledger = s.take()
    lost = ledger["lost_segments"]
    assert 0 < lost < 1_000_000 / MSS  # about a tenth of 691 segments
    assert lag == pytest.approx(0.01 + lost * 0.02)
    assert clock.now() == pytest.approx((wire_bytes(1_000_000) + lost * (MSS + HEADER)) / 1e6)


def test_the_turns_count_changes_of_direction():
    clock = ManualClock()
    s = shaper(clock)
    s.receive(10, 0.0, 0.0, 0.0)
    send(s, 10)
    send(s, 10)
    s.receive(10, 0.0, 0.0, 0.0)
    send(s, 10)
    assert s.take()["turns"] == 4


def test_a_shaped_connection_stamps_each_frame_and_counts_only_the_payload():
    clock = ManualClock()
    a_end, b_end = Pipe()
    a = ShapedConnection(a_end, shaper(clock, up=8 * MBIT))
    b = ShapedConnection(b_end, shaper(clock, down=8 * MBIT))
    a.send_bytes(b"x" * 1000)
    assert b.recv_bytes() == b"x" * 1000
    assert a.shaper.take()["up_bytes"] == 1000 and b.shaper.take()["down_bytes"] == 1000
    a.send_bytes(b"y")
    raw = b.inner.recv_bytes()  # what crosses the wire: the stamp first, then the frame as sent
    assert len(raw) == STAMP.size and b.inner.recv_bytes() == b"y"


def test_the_host_engine_channel_stays_on_the_device_and_its_peer_learns_it():
    clock = ManualClock()
    host_end, engine_end = Pipe()
    host = ShapedConnection(host_end, shaper(clock, up=8 * MBIT))
    engine = ShapedConnection(engine_end, shaper(clock, down=8 * MBIT))
    host.on_device = True
    host.send_bytes(b"z" * 10_000)
    engine.recv_bytes()
    assert engine.on_device and clock.now() == 0.0  # no link time either way
    engine.send_bytes(b"ok")
    assert host.recv_bytes() == b"ok"
    assert engine.shaper.take()["on_device_bytes"] == 10_002 and host.shaper.take()["up_bytes"] == 0


def test_a_frame_without_a_stamp_is_refused_not_misread():
    a_end, b_end = Pipe()
    b = ShapedConnection(b_end, shaper(ManualClock()))
    a_end.send_bytes(b"not a stamp")
    a_end.send_bytes(b"frame")
    with pytest.raises(EOFError, match="stamp"):
        b.recv_bytes()


def test_concurrent_senders_keep_each_stamp_with_its_frame():
    clock = ManualClock()
    a_end, b_end = Pipe()
    a = ShapedConnection(a_end, shaper(clock))
    b = ShapedConnection(b_end, shaper(clock))

    def sender(k: int) -> None:
        for _ in range(20):
            a.send_bytes(bytes([k]) * 50)

    threads = [threading.Thread(target=sender, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    got = [b.recv_bytes() for _ in range(80)]
    for t in threads:
        t.join()
    assert all(len(set(frame)) == 1 and len(frame) == 50 for frame in got)
