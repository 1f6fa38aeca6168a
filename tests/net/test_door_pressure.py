"""Doors under pressure: idle sockets from the party's own address cannot keep a real party out, a party
pushed out dials again, and refusals become a bounded number of notes counted per (address, kind)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable

import pytest

from hebench.net.admission import EVICTED, FAILED, PER_PEER, HandshakePool
from hebench.net.certs import make_party_certificates
from hebench.net.refusals import MAX_PEERS, OTHERS, Refusal, RefusalNotes
from hebench.net.transport import Channel, Door, Message, accept, connect

KEY = b"door-pressure-test-key"
IDLE = PER_PEER + 40  # silent sockets from 127.0.0.1, more than one address may hold


def _wait_for(predicate: Callable[[], bool], seconds: float = 30.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


@pytest.mark.parametrize("tls", [False, True], ids=["tcp", "tls"])
def test_a_real_party_gets_in_past_a_flood_of_idle_sockets_from_its_own_address(tls, tmp_path):
    # Arrange: a door whose deadline outlasts the test, and sockets from loopback that never say a word
    certs = make_party_certificates(tmp_path, ("aggregator", "client-0")) if tls else {}
    notes: list[Refusal] = []
    door = Door(KEY, handshake_s=120, on_refuse=notes.append, tls=certs.get("aggregator"))
    idle = [socket.create_connection(door.address, timeout=5) for _ in range(IDLE)]
    try:
        # Act: the real party, from the same address as every idle socket, dials after all of them
        got: list[Channel] = []
        server = threading.Thread(target=lambda: got.append(accept(door, "a client", 60)), daemon=True)
        server.start()
        client = connect(door.address, KEY, "aggregator", 10, tls=certs.get("client-0"), server="aggregator")
        server.join(timeout=60)

        # Assert: admitted and talking; the idle sockets beyond one address's share were pushed out
        assert got, "the real party was not admitted"
        client.send(Message("hello", {"client": 0}))
        assert got[0].recv("hello").meta == {"client": 0}
        pushed_out = IDLE - PER_PEER + 1  # one address holds at most PER_PEER; the real party took one place
        assert _wait_for(lambda: door.notes.total >= pushed_out), door.notes.total
    finally:
        door.close()  # first: handshakes still in flight end with the door, not as refusals
        for sock in idle:
            sock.close()
    # every refusal counted, in at most two notes (the first at once, the rest when the door closed)
    assert sum(n.count for n in notes) == door.notes.total == pushed_out
    assert len(notes) <= 2 and {(n.peer, n.kind) for n in notes} == {("127.0.0.1", EVICTED)}


class Dropper:
    """A relay that hangs up on the first ``drops`` connections (a busy door pushing a party out), then relays."""

    def __init__(self, target: tuple[str, int], drops: int) -> None:
        self.target, self.drops, self.accepted = target, drops, 0
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.address = self.sock.getsockname()[:2]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            inbound, _ = self.sock.accept()
            self.accepted += 1
            if self.accepted <= self.drops:
                inbound.close()
                continue
            outbound = socket.create_connection(self.target)
            for a, b in ((inbound, outbound), (outbound, inbound)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass


@pytest.mark.parametrize("tls", [False, True], ids=["tcp", "tls"])
def test_a_party_pushed_out_of_the_handshake_dials_again(tls, tmp_path):
    certs = make_party_certificates(tmp_path, ("aggregator", "client-0")) if tls else {}
    door = Door(KEY, tls=certs.get("aggregator"))
    dropper = Dropper(door.address, drops=3)
    try:
        client = connect(dropper.address, KEY, "aggregator", 10, tls=certs.get("client-0"), server="aggregator")
        server = accept(door, "a client", 10)
        client.send(Message("hello"))
        assert server.recv("hello") and dropper.accepted == 4  # three dropped attempts, then in
    finally:
        door.close()


def test_a_refused_key_is_not_tried_again():
    door = Door(KEY)
    dropper = Dropper(door.address, drops=0)
    try:
        with pytest.raises(Exception, match="did not authenticate"):
            connect(dropper.address, b"another key", "aggregator", 10)
        assert dropper.accepted == 1
    finally:
        door.close()


def _silent_pair() -> tuple[socket.socket, socket.socket]:
    return socket.socketpair()


def test_one_address_holds_at_most_its_share_and_never_pushes_out_another():
    # Arrange: a pool of 4, at most 2 per address; each handshake waits for a byte that never comes
    pool = HandshakePool(deadline_s=60, limit=4, per_peer=2)
    refused: list[tuple[str, str]] = []
    ends = []

    def knock(address: str) -> None:
        ours, theirs = _silent_pair()
        ends.append(theirs)
        pool.start(ours, (address, 1), lambda sock: sock.recv(1) or _eof(), lambda _: None, _note(refused))

    # Act: five from one address, then two from another
    for _ in range(5):
        knock("10.0.0.1")
    for _ in range(2):
        knock("10.0.0.2")

    # Assert: the first address lost its three oldest to its own newcomers, the second lost nothing
    assert _wait_for(lambda: len(refused) == 3), refused
    assert refused == [("10.0.0.1", EVICTED)] * 3 and pool.in_flight == 4
    knock("10.0.0.3")  # the pool is full: the busiest address (a tie: the first) makes room
    assert _wait_for(lambda: len(refused) == 4) and refused[-1] == ("10.0.0.1", EVICTED)
    pool.close()  # handshakes dropped at close are not refusals
    time.sleep(0.2)
    assert len(refused) == 4
    for sock in ends:
        sock.close()


def test_a_handshake_past_its_deadline_is_ended_by_the_pool():
    pool = HandshakePool(deadline_s=0.3)
    refused: list[tuple[str, str]] = []
    ours, theirs = _silent_pair()
    pool.start(ours, ("10.0.0.9", 1), lambda sock: sock.recv(1) or _eof(), lambda _: None, _note(refused))
    assert _wait_for(lambda: bool(refused)) and refused[0][1].startswith("too slow")
    assert pool.in_flight == 0
    theirs.close()
    pool.close()


def _eof() -> None:
    raise EOFError("closed")


def _note(out: list[tuple[str, str]]) -> Callable:
    return lambda peer, kind, err: out.append((peer[0], kind))


def test_refusal_notes_are_bounded_and_their_counts_add_up():
    notes: list[Refusal] = []
    tally = RefusalNotes(notes.append, every_s=3600)
    for i in range(1000):
        tally.add("127.0.0.1", EVICTED if i % 2 else FAILED, f"refused peer {i}")
    assert [(n.kind, n.count) for n in notes] == [(FAILED, 1), (EVICTED, 1)]  # the first of each kind, at once
    tally.flush()
    assert len(notes) == 4 and sum(n.count for n in notes) == 1000
    assert [n.problem for n in notes] == [f"refused peer {i}" for i in range(4)]  # each describes its first
    tally.flush()
    assert len(notes) == 4  # nothing new, nothing reported


def test_refusal_notes_count_many_addresses_together_beyond_a_bound():
    notes: list[Refusal] = []
    tally = RefusalNotes(notes.append, every_s=3600)
    for i in range(MAX_PEERS + 50):
        tally.add(f"10.0.{i // 250}.{i % 250}", FAILED, "x")
    tally.flush()
    others = [n for n in notes if n.peer == OTHERS]
    assert len(notes) == MAX_PEERS + len(others) and len(others) == 2 and sum(n.count for n in others) == 50
