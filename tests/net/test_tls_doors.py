"""``transport: tls``: a party's door over mutual TLS refuses peers without this run's certificate, and a
network observer between two parties sees only ciphertext bytes (with a control that sees the update
in the clear without TLS)."""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import queue
import secrets
import socket
import ssl
import threading

import numpy as np
import pytest

from hebench.errors import PartyError
from hebench.net.certs import TLSFiles, make_party_certificates
from hebench.net.stream import REJECTED, FramedSocket
from hebench.net.transport import Door, Message, accept, connect

KEY = secrets.token_bytes(32)


@pytest.fixture(scope="module")
def certs(tmp_path_factory) -> dict[str, TLSFiles]:
    return make_party_certificates(tmp_path_factory.mktemp("run-ca"), ("aggregator", "key-authority", "client-0"))


@pytest.fixture(scope="module")
def other_ca(tmp_path_factory) -> dict[str, TLSFiles]:
    return make_party_certificates(tmp_path_factory.mktemp("other-ca"), ("client-0",))


def test_a_peer_with_this_runs_certificate_and_key_is_admitted(certs):
    door = Door(KEY, tls=certs["aggregator"])
    try:
        client = connect(door.address, KEY, "aggregator", 10, tls=certs["client-0"], server="aggregator")
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
    door = Door(KEY, tls=certs["aggregator"], handshake_s=30)  # the dialler's own deadline (10 s) ends it first
    try:
        # the right shared key but plain TCP (no TLS at all): it waits for a key challenge, the door for a TLS
        # hello, until the dialler gives up (a hang-up, which reads as a drop: no retry here)
        line = _refused(door, lambda: connect(door.address, KEY, "aggregator", 2, retry_s=0))
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
        line = _refused(
            door, lambda: connect(door.address, KEY, "aggregator", 2, tls=other_ca["client-0"], server="aggregator")
        )
        assert "failed TLS authentication" in line
    finally:
        door.close()


def test_this_runs_certificate_with_the_wrong_door_key_is_refused(certs):
    door = Door(KEY, tls=certs["aggregator"])
    try:
        _refused(
            door,
            lambda: connect(
                door.address, secrets.token_bytes(32), "aggregator", 2, tls=certs["client-0"], server="aggregator"
            ),
        )
    finally:
        door.close()


class FakeDoor:
    """A TLS listener that plays a door's part without the door's key: it challenges the dialler and keeps its
    answer, then answers the dialler's challenge with a guess and keeps whatever comes next."""

    def __init__(self, files: TLSFiles) -> None:
        self.context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=str(files.ca))
        self.context.load_cert_chain(str(files.cert), str(files.key))
        self.context.verify_mode = ssl.CERT_REQUIRED
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.address = self.sock.getsockname()[:2]
        self.got: list[bytes] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        raw, _ = self.sock.accept()
        try:
            framed = FramedSocket(self.context.wrap_socket(raw, server_side=True))
            framed.send_bytes(secrets.token_bytes(32))
            self.got.append(framed.recv_bytes())  # the dialler's proof of the key: accepted, whatever it is
            framed.send_bytes(b"ok")
            nonce = framed.recv_bytes()  # a dialler that checks the door's key challenges it now
            framed.send_bytes(hmac.digest(secrets.token_bytes(32), nonce, hashlib.sha256))
            self.got.append(framed.recv_bytes())  # what the dialler says once it believes this is the door
        except (OSError, EOFError, ssl.SSLError):
            pass
        finally:
            raw.close()


def test_a_listener_with_a_clients_certificate_cannot_pose_as_a_door(certs):
    fake = FakeDoor(certs["client-0"])  # a party's client certificate: no server usage
    with pytest.raises(PartyError, match="unsuitable certificate purpose"):
        connect(fake.address, KEY, "aggregator", 5, tls=certs["client-0"], server="aggregator")
    assert fake.got == []  # refused before any proof of the key left the dialler


def test_a_listener_without_the_door_key_is_refused_by_the_dialler_under_tls(certs):
    files = certs["aggregator"]
    fake = FakeDoor(TLSFiles(files.server_cert, files.server_key, files.ca))  # the right certificate, no key
    with pytest.raises(PartyError, match="did not authenticate over TLS"):
        connect(fake.address, KEY, "aggregator", 5, tls=certs["client-0"], server="aggregator")
    # it never heard the dialler's first message: at most the dialler's refusal of its proof (when that
    # arrives before the dialler closes)
    assert fake.got[1:] in ([], [REJECTED])


def test_a_door_of_another_party_is_refused_by_the_dialler(certs):
    door = Door(KEY, tls=certs["key-authority"])  # a real door, with the key, but the key authority's
    try:
        with pytest.raises(PartyError, match="certificate for 'hebench-party-key-authority'"):
            connect(door.address, KEY, "aggregator", 5, tls=certs["client-0"], server="aggregator")
    finally:
        door.close()


def test_party_certificates_serve_one_side_only(certs):
    for files in certs.values():
        assert _usages(files.cert) == {"clientAuth"}
        if files.server_cert is not None:
            assert _usages(files.server_cert) == {"serverAuth"}
    assert certs["aggregator"].server_cert and certs["client-0"].server_cert is None


def _usages(path) -> set[str]:
    from cryptography import x509

    usage = x509.load_pem_x509_certificate(path.read_bytes()).extensions.get_extension_for_class(x509.ExtendedKeyUsage)
    return {oid._name for oid in usage.value}


class Tap:
    """A TCP relay between two parties that keeps every byte it forwards (a network observer), per direction."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target, self.seen = target, bytearray()
        self.streams = {"to listener": bytearray(), "to dialler": bytearray()}
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.address = self.sock.getsockname()[:2]
        self.pipes: list[threading.Thread] = []
        self.serving = threading.Thread(target=self._serve, daemon=True)
        self.serving.start()

    def _serve(self) -> None:
        inbound, _ = self.sock.accept()
        outbound = socket.create_connection(self.target)
        for a, b, way in ((inbound, outbound, "to listener"), (outbound, inbound, "to dialler")):
            self.pipes.append(threading.Thread(target=self._pipe, args=(a, b, way), daemon=True))
            self.pipes[-1].start()

    def finished(self) -> dict[str, bytes]:
        """Both directions, once both parties have closed the connection."""
        self.serving.join(timeout=20)
        for pipe in self.pipes:
            pipe.join(timeout=20)
        return {way: bytes(stream) for way, stream in self.streams.items()}

    def _pipe(self, src: socket.socket, dst: socket.socket, way: str) -> None:
        try:
            while data := src.recv(65536):
                self.seen += data
                self.streams[way] += data
                dst.sendall(data)
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def only_tls_records(stream: bytes) -> bool:
    """Whether ``stream`` is a sequence of whole TLS records (type 20-23, version 3.x, at most 2^14 + 2048)."""
    at = 0
    while at < len(stream):
        if at + 5 > len(stream):
            return False
        kind, major, minor, size = stream[at], stream[at + 1], stream[at + 2], int.from_bytes(stream[at + 3 : at + 5])
        if kind not in (20, 21, 22, 23) or major != 3 or not 1 <= minor <= 4 or size > 2**14 + 2048:
            return False
        at += 5 + size
    return at == len(stream)


def _observed(certs, tls: bool) -> tuple[bytes, bytes, dict[str, bytes]]:
    """Send one float32 update through a tap; (what the receiving party got, what the observer saw, and what
    it saw per direction)."""
    update = np.random.default_rng(0).normal(size=4096).astype("<f4").tobytes()
    door = Door(KEY, tls=certs["aggregator"] if tls else None)
    tap = Tap(door.address)
    try:
        client = connect(
            tap.address, KEY, "aggregator", 10, tls=certs["client-0"] if tls else None, server="aggregator"
        )
        server = accept(door, "a client", 10)
        client.send(Message("update", {"round": 0}, (update,)))
        received = server.recv("update").parts[0]
        client.close()
        server.close()
    finally:
        door.close()
    streams = tap.finished()
    return received, bytes(tap.seen), streams


def test_a_network_observer_sees_no_update_bytes_over_tls(certs):
    received, seen, streams = _observed(certs, tls=True)
    window = received[:64]  # any 16 consecutive float32 values of the update
    assert received and window not in seen
    assert len(seen) > len(received)  # the bytes did pass through the observer
    assert all(only_tls_records(stream) for stream in streams.values())  # nothing outside TLS, either way


def test_control_without_tls_the_observer_reads_the_update(certs):
    received, seen, streams = _observed(certs, tls=False)
    assert received[:64] in seen
    assert not any(only_tls_records(stream) for stream in streams.values())  # the record check's control


class _Control:
    """A share holder's control pipe: its index, then where it listens."""

    def __init__(self) -> None:
        self.sent: queue.Queue = queue.Queue()

    def recv(self) -> int:
        return 1

    def send(self, item) -> None:
        self.sent.put(item)


def _share_traffic(tmp_path, transport: str) -> tuple[Tap, bytes]:
    """One secret-sharing round between client 0 and share holder 1 through a tap, with aggregator 0 a bare
    door: (the tap, the share sum client 0 received from the holder)."""
    from hebench.config import parse_suite
    from hebench.fl.meter import PhaseMeter
    from hebench.fl.party import AGGREGATOR_DOOR, PartyContext, Wiring
    from hebench.net.certs import party_tls
    from hebench.protections.sharing.holder import run_share_holder
    from hebench.protections.sharing.link import share_link
    from hebench.runtime.local.credentials import RunCredentials

    suite = parse_suite(
        {
            "name": "shares",
            "data": {"dataset": "digits", "clients": 1},
            "training": {"rounds": 1},
            "configurations": [{"mode": "secret-sharing", "params": {"aggregators": 2}, "transport": transport}],
            "measure": {"timeout_s": 20},
        }
    )
    folder = tmp_path / "parties"
    make_party_certificates(folder, ("aggregator", "aggregator-1", "client-0"), ("aggregator", "aggregator-1"))
    creds = RunCredentials(suite.configurations[0], 1)
    tls = str(folder) if transport == "tls" else None
    holder = PartyContext(
        suite, suite.configurations[0], tmp_path, creds.of("aggregator-1"), "run", 0, (1, 8, 8), 10, tls=tls
    )
    control = _Control()
    threading.Thread(target=run_share_holder, args=(holder, control, queue.Queue()), daemon=True).start()
    tap = Tap(control.sent.get(timeout=20))
    coordinator = Door(creds.door(AGGREGATOR_DOOR), tls=party_tls(folder, "aggregator") if tls else None)
    try:
        client = dataclasses.replace(holder, client_index=0, credentials=creds.of("client-0"))
        link = share_link(client, Wiring(None, coordinator.address, None, (tap.address,)), 5, PhaseMeter())
        update = np.random.default_rng(1).normal(0, 0.5, 4096).astype(np.float32)
        link.upload({"round": 0, "epoch": 0, "samples": 5}, [update], None, PhaseMeter())
        share_sum = link.holders[0].recv("share_sum_chunk").parts[0]  # type: ignore[attr-defined]
        link.close()
    finally:
        coordinator.close()
    tap.finished()
    return tap, share_sum


def test_share_holder_traffic_is_only_tls_records_under_transport_tls(tmp_path):
    tap, share_sum = _share_traffic(tmp_path, "tls")
    streams = tap.finished()
    assert streams["to listener"] and streams["to dialler"]  # the share went one way, its sum the other
    assert all(only_tls_records(stream) for stream in streams.values())
    assert share_sum[:64] not in tap.seen  # the holder's sum crossed encrypted


def test_control_share_holder_traffic_over_tcp_is_readable(tmp_path):
    tap, share_sum = _share_traffic(tmp_path, "tcp")
    assert share_sum[:64] in tap.seen and not only_tls_records(tap.finished()["to listener"])


def test_a_runtime_that_cannot_make_tls_refuses_the_suite_instead_of_running_without(tmp_path):
    from hebench.config import parse_suite
    from hebench.errors import ParameterError
    from hebench.runtime.runner import Runner

    class OtherRuntime:
        name, supports_resume = "flower", False

    suite = parse_suite({"name": "x", "configurations": [{"mode": "raw", "transport": "tls"}]})
    with pytest.raises(ParameterError, match="transport: tls"):
        Runner(suite, tmp_path, runtime=OtherRuntime()).run()  # type: ignore[arg-type]
    assert not (tmp_path / "results.jsonl").exists()
