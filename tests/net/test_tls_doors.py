"""``transport: tls``: a party's door over mutual TLS refuses peers without this run's certificate, and a
network observer between two parties sees only ciphertext bytes (with a control that sees the update
in the clear without TLS)."""

from __future__ import annotations

import secrets
import socket
import ssl
import threading

import numpy as np
import pytest

from hebench.errors import PartyError
from hebench.net.certs import TLSFiles, make_party_certificates
from hebench.net.stream import FramedSocket
from hebench.net.transport import Door, Message, accept, connect

KEY = secrets.token_bytes(32)


@pytest.fixture(scope="module")
def certs(tmp_path_factory) -> dict[str, TLSFiles]:
    return make_party_certificates(tmp_path_factory.mktemp("run-ca"), ("aggregator", "client-0"))


@pytest.fixture(scope="module")
def other_ca(tmp_path_factory) -> dict[str, TLSFiles]:
    return make_party_certificates(tmp_path_factory.mktemp("other-ca"), ("client-0",))


def test_a_peer_with_this_runs_certificate_and_key_is_admitted(certs):
    door = Door(KEY, tls=certs["aggregator"])
    try:
        client = connect(door.address, KEY, "aggregator", 10, tls=certs["client-0"])
        server = accept(door, "a client", 10)
        client.send(Message("hello", {"client": 0}, (b"x" * 10,)))
        assert server.recv("hello").parts == (b"x" * 10,)
        client.close()
        server.close()
    finally:
        door.close()


def _refused(door: Door, dial) -> str:
    with pytest.raises(PartyError):
        dial()
    with pytest.raises(PartyError, match="no party connected"):
        door.next(0.5)
    return door.refused[-1]


def test_a_peer_without_a_certificate_is_refused(certs, tmp_path):
    door = Door(KEY, tls=certs["aggregator"])
    try:
        # the right shared key but plain TCP (no TLS at all)
        line = _refused(door, lambda: connect(door.address, KEY, "aggregator", 2))
        assert "failed TLS authentication" in line
        # TLS that trusts the server but presents no client certificate

        def anonymous() -> None:
            ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=str(certs["client-0"].ca))
            raw = socket.create_connection(door.address, timeout=5)
            sock = ctx.wrap_socket(raw, server_hostname="127.0.0.1")
            FramedSocket(sock).recv_bytes()  # the server ends the session: no certificate, no channel

        with pytest.raises((ssl.SSLError, OSError, EOFError)):
            anonymous()
        raise_if_admitted(door)
    finally:
        door.close()


def raise_if_admitted(door: Door) -> None:
    with pytest.raises(PartyError, match="no party connected"):
        door.next(0.5)


def test_a_certificate_from_another_ca_is_refused(certs, other_ca):
    door = Door(KEY, tls=certs["aggregator"])
    try:
        line = _refused(door, lambda: connect(door.address, KEY, "aggregator", 2, tls=other_ca["client-0"]))
        assert "failed TLS authentication" in line
    finally:
        door.close()


def test_this_runs_certificate_with_the_wrong_door_key_is_refused(certs):
    door = Door(KEY, tls=certs["aggregator"])
    try:
        _refused(door, lambda: connect(door.address, secrets.token_bytes(32), "aggregator", 2, tls=certs["client-0"]))
    finally:
        door.close()


class Tap:
    """A TCP relay between two parties that keeps every byte it forwards (a network observer)."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target, self.seen = target, bytearray()
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.address = self.sock.getsockname()[:2]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        inbound, _ = self.sock.accept()
        outbound = socket.create_connection(self.target)
        for a, b in ((inbound, outbound), (outbound, inbound)):
            threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    def _pipe(self, src: socket.socket, dst: socket.socket) -> None:
        while data := src.recv(65536):
            self.seen += data
            dst.sendall(data)


def _observed(certs, tls: bool) -> tuple[bytes, bytes]:
    """Send one float32 update through a tap; (what the receiving party got, what the observer saw)."""
    update = np.random.default_rng(0).normal(size=4096).astype("<f4").tobytes()
    door = Door(KEY, tls=certs["aggregator"] if tls else None)
    tap = Tap(door.address)
    try:
        client = connect(tap.address, KEY, "aggregator", 10, tls=certs["client-0"] if tls else None)
        server = accept(door, "a client", 10)
        client.send(Message("update", {"round": 0}, (update,)))
        received = server.recv("update").parts[0]
        client.close()
        server.close()
    finally:
        door.close()
    return received, bytes(tap.seen)


def test_a_network_observer_sees_no_update_bytes_over_tls(certs):
    received, seen = _observed(certs, tls=True)
    window = received[:64]  # any 16 consecutive float32 values of the update
    assert received and window not in seen
    assert len(seen) > len(received)  # the bytes did pass through the observer


def test_control_without_tls_the_observer_reads_the_update(certs):
    received, seen = _observed(certs, tls=False)
    assert received[:64] in seen


def test_a_runtime_that_cannot_make_tls_refuses_the_suite_instead_of_running_without(tmp_path):
    from hebench.errors import ParameterError
    from hebench.runtime.runner import Runner
    from hebench.suite import parse_suite

    class OtherRuntime:
        name, supports_resume = "flower", False

    suite = parse_suite({"name": "x", "configurations": [{"mode": "raw", "transport": "tls"}]})
    with pytest.raises(ParameterError, match="transport: tls"):
        Runner(suite, tmp_path, runtime=OtherRuntime()).run()  # type: ignore[arg-type]
    assert not (tmp_path / "results.jsonl").exists()
