"""The Flower hub under a flood of silent peers: a bounded handshake pool (threads stay bounded), a bounded
number of ``hub_note`` records whose counts add up, and a real party still served."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from hebench.net.admission import EVICTED, MAX_PENDING, PER_PEER
from hebench.results.records import HubNoteRecord

pytest.importorskip("flwr", reason="the hebench[flower] extra is not installed")

from tests.runtime.flower.test_flower_parts import RunningHub

SILENT = 300


def _notes(records) -> list[HubNoteRecord]:
    out = []
    while not records.empty():
        rec = records.get_nowait()
        if isinstance(rec, HubNoteRecord):
            out.append(rec)
    return out


def test_three_hundred_silent_peers_hold_a_bounded_pool_and_a_real_party_gets_in(tmp_path):
    # Arrange: a hub with both doors open
    hub = RunningHub(tmp_path, "host-he")
    before = threading.active_count()

    # Act: 300 sockets connect to the clients' door and say nothing; then a real party knocks
    silent = [socket.create_connection(hub.doors["client"], timeout=5) for _ in range(SILENT)]
    try:
        deadline = time.monotonic() + 30
        while hub.hub.refusals.total < SILENT - PER_PEER and time.monotonic() < deadline:
            time.sleep(0.05)
        threads = threading.active_count() - before
        link = hub.link("client", hub.client_key)  # would time out if the door were held

        # Assert: the pool held at most one address's share, as threads; the real party was admitted
        assert threads <= MAX_PENDING + 2, threads  # a handshake thread each, plus the pool's reaper
        link.close()
        pushed_out = SILENT - PER_PEER + 1
        deadline = time.monotonic() + 30
        while hub.hub.refusals.total < pushed_out and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        hub.hub.close()  # the driver's stop: handshakes in flight end, counts are reported
        for sock in silent:
            sock.close()
    notes = _notes(hub.records)
    assert sum(n.count for n in notes) == hub.hub.refusals.total == pushed_out
    assert len(notes) <= 2 and all(EVICTED in n.problem and n.peer == "127.0.0.1" for n in notes)
