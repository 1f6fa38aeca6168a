"""Listeners survive hostile peers: garbage, a huge length prefix, a truncated frame, a silent (slow-loris) peer.

Each is refused with one line, nothing large is allocated, and a real peer is still served afterwards.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import time
from collections.abc import Callable

import pytest

from hebench.errors import PartyError
from hebench.net.limits import PREAUTH_MAX_FRAME
from hebench.net.stream import FramedSocket, dial
from hebench.net.transport import Channel, Door, Message, accept, connect
from hebench.protections.offload.engine import EngineConfig, EngineServer
from hebench.runtime.flower.hub_wire import admit as hub_admit

KEY = b"shared-test-key"
HUGE = struct.pack(">Q", 1 << 60)  # an 8-byte length prefix announcing an exabyte


def _wait_for(predicate: Callable[[], bool], seconds: float = 20.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def _hostile_peers(address: tuple[str, int]) -> list[socket.socket]:
    """Open the four hostile connections; the silent one stays open (the caller closes them all)."""
    garbage = socket.create_connection(address, timeout=5)
    garbage.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" + bytes(range(256)) * 4)
    huge = socket.create_connection(address, timeout=5)
    huge.sendall(HUGE + b"\x00" * 16)
    truncated = socket.create_connection(address, timeout=5)
    truncated.sendall(struct.pack(">Q", 32) + b"\x01" * 5)
    with contextlib.suppress(OSError):  # a TLS door may already have refused it and closed (not connected)
        truncated.shutdown(socket.SHUT_WR)
    silent = socket.create_connection(address, timeout=5)  # connects and says nothing
    return [garbage, huge, truncated, silent]


@pytest.fixture
def engine():
    lines: list[str] = []
    server = EngineServer(EngineConfig(authkey=KEY, timeout_s=10, handshake_s=1.0), on_error=lines.append)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server, lines
    server.close()
    thread.join(timeout=5)


def test_engine_refuses_hostile_peers_and_keeps_serving(engine):
    server, lines = engine
    hostile = _hostile_peers(server.address)
    try:
        # while the silent peer still holds its connection, a real key authority is served
        framed = dial(server.address, tls=None, authkey=KEY, peer="engine", timeout_s=10)
        ka = Channel(framed, "engine", 10)  # type: ignore[arg-type]
        ka.send(Message("hello", {"role": "nobody"}))
        with pytest.raises(PartyError, match="unknown role"):
            ka.recv()
        assert _wait_for(lambda: len(lines) >= 5), lines
    finally:
        for sock in hostile:
            sock.close()
    refused = [line for line in lines if "refused a peer" in line]
    assert len(refused) == 4, lines  # one line per hostile peer
    assert any("limit" in line for line in refused)  # the huge prefix, refused before any allocation
    assert any("too slow" in line for line in refused)  # the silent peer
    assert list(server.errors) == lines


def test_engine_error_log_is_bounded(engine):
    server, lines = engine
    for _ in range(server.errors.maxlen + 5):
        server._note("127.0.0.1:1", "refused a peer: test")
    assert len(server.errors) == server.errors.maxlen and len(lines) == server.errors.maxlen + 5


def test_authenticated_peer_cannot_send_a_frame_above_the_limit(monkeypatch):
    monkeypatch.setenv("HEBENCH_MAX_FRAME_BYTES", str(PREAUTH_MAX_FRAME))
    left, right = socket.socketpair()
    receiver = Channel(FramedSocket(left, max_frame=PREAUTH_MAX_FRAME), "a peer", 5)  # type: ignore[arg-type]
    right.sendall(HUGE)
    with pytest.raises(PartyError, match="oversized frame"):
        receiver.recv()
    left.close()
    right.close()


def test_frame_limit_setting_is_checked(monkeypatch):
    from hebench.errors import ParameterError
    from hebench.net.limits import max_frame_bytes

    monkeypatch.setenv("HEBENCH_MAX_FRAME_BYTES", "lots")
    with pytest.raises(ParameterError, match="HEBENCH_MAX_FRAME_BYTES"):
        max_frame_bytes()


def test_party_door_refuses_hostile_peers_and_admits_a_real_party():
    door = Door(KEY, handshake_s=1.0)
    hostile = _hostile_peers(door.address)
    try:
        got: list[Channel] = []
        server = threading.Thread(target=lambda: got.append(accept(door, "a client", 10)), daemon=True)
        server.start()
        client = connect(door.address, KEY, "aggregator", 10)
        server.join(timeout=15)
        assert got, "the real party was not admitted"
        client.send(Message("hello", {"client": 0}))
        assert got[0].recv("hello").meta == {"client": 0}
        assert _wait_for(lambda: len(door.refused) >= 4), list(door.refused)
    finally:
        for sock in hostile:
            sock.close()
        door.close()
    assert all("refused a peer" in line for line in door.refused)


def test_party_door_with_no_party_times_out_cleanly():
    door = Door(KEY, handshake_s=1.0)
    try:
        with pytest.raises(PartyError, match="no party connected"):
            accept(door, "a client", 0.5)
    finally:
        door.close()


def test_wrong_key_is_refused_at_the_door():
    door = Door(KEY, handshake_s=2.0)
    try:
        with pytest.raises(PartyError, match="did not authenticate"):
            connect(door.address, b"another key", "aggregator", 5)
        assert _wait_for(lambda: len(door.refused) == 1)
    finally:
        door.close()


@pytest.mark.parametrize("payload", [HUGE, b"", struct.pack(">Q", 64) + b"\x00" * 3])
def test_hub_door_refuses_oversized_truncated_and_silent_peers(payload, monkeypatch):
    monkeypatch.setattr("hebench.runtime.flower.hub_wire.HANDSHAKE_S", 1.0)
    with socket.create_server(("127.0.0.1", 0)) as listener:
        client = socket.create_connection(listener.getsockname()[:2], timeout=5)
        server, _ = listener.accept()
    if payload:
        client.sendall(payload)
        client.shutdown(socket.SHUT_WR)
    try:
        with pytest.raises(PartyError, match="refused"):
            hub_admit(server, None, KEY, "a party at the client door", 5)
    finally:
        client.close()


def test_engine_serve_prints_one_line_per_refused_peer(tmp_path):
    import subprocess
    import sys

    key = tmp_path / "key"
    key.write_bytes(KEY)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = ["engine", "serve", "--listen", f"127.0.0.1:{port}", "--authkey-file", str(key)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "hebench", *command],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert "engine listening" in proc.stderr.readline()
        with socket.create_connection(("127.0.0.1", port), timeout=5) as garbage:
            garbage.sendall(HUGE)
            line = proc.stderr.readline()  # bounded: the engine answers the huge prefix at once
        assert "refused a peer" in line and "limit" in line
        framed = dial(("127.0.0.1", port), tls=None, authkey=KEY, peer="engine", timeout_s=10)  # still serving
        framed.close()
    finally:
        proc.kill()
        rest = proc.communicate(timeout=10)[1]
    assert "refused" not in rest  # one line per refusal, not two


def test_tls_engine_refuses_hostile_peers_and_keeps_serving(tmp_path):
    from hebench.net.certs import make_certificates

    files = make_certificates(tmp_path / "certs", hosts=1)
    lines: list[str] = []
    server = EngineServer(EngineConfig(tls=files["engine-0"], timeout_s=10, handshake_s=1.0), on_error=lines.append)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    hostile = _hostile_peers(server.address)
    try:
        framed = dial(server.address, tls=files["key-authority"], authkey=None, peer="engine", timeout_s=10)
        ka = Channel(framed, "engine", 10)  # type: ignore[arg-type]
        ka.send(Message("hello", {"role": "nobody"}))
        with pytest.raises(PartyError, match="unknown role"):
            ka.recv()
        assert _wait_for(lambda: len(lines) >= 5), lines
    finally:
        for sock in hostile:
            sock.close()
        server.close()
        thread.join(timeout=5)
    refused = [line for line in lines if "refused a peer" in line]
    assert len(refused) == 4, lines  # garbage, huge prefix and truncated frame fail TLS; the silent one times out
    assert any("too slow" in line for line in refused), refused
