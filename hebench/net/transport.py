"""Framed messages over authenticated TCP connections, with every byte counted.

Built on :mod:`multiprocessing.connection` (HMAC challenge on connect, length-
prefixed frames) but carrying only bytes: a JSON header and binary parts,
never pickles, so a peer cannot make another execute code. Optionally every
received frame is appended to a transcript file for security scans.

A listening :class:`Door` authenticates each connection in its own thread
within a deadline and with small frames only, in a bounded handshake pool
that is fair per peer address, so a peer that connects and says nothing, or
announces a huge frame, is refused (counted per address and kind) while the
party keeps serving its real peers; a real party pushed out by a flood dials
again. Authenticated frames are bounded too
(:func:`hebench.net.limits.max_frame_bytes`).
"""

from __future__ import annotations

import json
import logging
import os
import queue
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing import AuthenticationError
from multiprocessing.connection import Connection, answer_challenge, deliver_challenge
from pathlib import Path
from typing import Any, BinaryIO

from hebench.errors import HebenchError, ParameterError, PartyError, PeerClosedError
from hebench.net import stream
from hebench.net.admission import FAILED, HandshakePool
from hebench.net.certs import TLSFiles, party_cn, party_of
from hebench.net.door_keys import MAX_CLAIM, DoorKeys, claim, claimed
from hebench.net.limits import HANDSHAKE_S, SETUP_RETRY_S, FrameTooLargeError, max_frame_bytes
from hebench.net.messages import MessageKind
from hebench.net.refusals import Refusal, RefusalNotes
from hebench.net.retry import DROPPED, Dropped, with_backoff
from hebench.net.shaping import scope as shaping

log = logging.getLogger("hebench.net")

Address = tuple[str, int]


@dataclass(frozen=True)
class Message:
    """One frame: its kind (a :class:`~hebench.net.messages.MessageKind`; a kind read off the wire is its plain
    string, equal to the member), a JSON header and binary parts."""

    kind: str
    meta: dict[str, Any] = field(default_factory=dict)
    parts: tuple[bytes, ...] = ()


def encode(msg: Message) -> bytes:
    head = json.dumps({"kind": msg.kind, "meta": msg.meta, "sizes": [len(p) for p in msg.parts]}).encode()
    return b"".join([struct.pack(">I", len(head)), head, *msg.parts])


def decode(frame: bytes) -> Message:
    try:
        (n,) = struct.unpack(">I", frame[:4])
        head = json.loads(frame[4 : 4 + n])
        if (
            not isinstance(head, dict)
            or not isinstance(head.get("kind"), str)
            or not isinstance(head.get("meta"), dict)
        ):
            raise ValueError("header is not {kind, meta, sizes}")
        sizes = head.get("sizes")
        if not isinstance(sizes, list) or not all(type(size) is int and size >= 0 for size in sizes):
            raise ValueError("part sizes are not byte counts")
        parts, offset = [], 4 + n
        for size in sizes:
            parts.append(frame[offset : offset + size])
            offset += size
        if offset != len(frame):
            raise ValueError("frame length does not match its header")
        return Message(head["kind"], head["meta"], tuple(parts))
    except (struct.error, ValueError, KeyError, TypeError) as err:
        raise PartyError(
            f"malformed message from peer: {err}", "check that every party runs the same hebench"
        ) from None
    except RecursionError:
        raise PartyError("malformed message from peer: header nested too deeply", "same hebench?") from None


_CLOSED_FIX = (
    "see that party's own error; if it reported none it was killed or crashed (a run keeps its completed "
    "rounds: rerun with --resume)"
)
_FRAME_FIX = "raise HEBENCH_MAX_FRAME_BYTES on the receiving side if updates really are this large"


class Channel:
    """One side of a connection; counts bytes both ways. ``party``: who the peer proved to be at a door that
    admits by party (:class:`~hebench.net.door_keys.DoorKeys`), else None."""

    def __init__(self, conn: Connection, peer: str, timeout_s: float, transcript: Path | None = None) -> None:
        self.conn = shaping.attach(conn, peer)
        self.peer = peer
        self.party: str | None = None
        self.timeout_s = timeout_s
        self.bytes_sent = 0
        self.bytes_received = 0
        self.max_frame = max_frame_bytes()
        self._transcript = transcript.open("ab") if transcript else None

    def record_to(self, transcript: Path | None) -> None:
        """Append every frame received from now on to ``transcript``."""
        if transcript is not None:
            self._transcript = transcript.open("ab")

    def send(self, msg: Message) -> int:
        frame = encode(msg)
        try:
            self.conn.send_bytes(frame)
        except OSError as err:
            raise PeerClosedError(
                f"lost connection to {self.peer} while sending: {err}", "see that party's error"
            ) from None
        self.bytes_sent += len(frame)
        return len(frame)

    def recv(self, expect: str | None = None) -> Message:
        try:
            if not self.conn.poll(self.timeout_s):
                raise PartyError(
                    f"no message from {self.peer} within {self.timeout_s:.0f} s",
                    "raise measure.timeout_s for slow adapters, or check that party's error",
                )
            frame = self.conn.recv_bytes(self.max_frame)
        except FrameTooLargeError as err:
            raise PartyError(f"{self.peer} sent an oversized frame: {err}", _FRAME_FIX) from None
        except OSError as err:
            if "bad message length" in str(err):  # multiprocessing's refusal of a frame above maxlength
                raise PartyError(
                    f"{self.peer} sent a frame above the {self.max_frame}-byte limit", _FRAME_FIX
                ) from None
            raise PeerClosedError(f"{self.peer} closed the connection ({err})", _CLOSED_FIX) from None
        except EOFError as err:
            detail = str(err) or "end of stream"
            raise PeerClosedError(f"{self.peer} closed the connection ({detail})", _CLOSED_FIX) from None
        self.bytes_received += len(frame)
        if self._transcript:
            write_frame(self._transcript, frame)
        msg = decode(frame)
        if msg.kind == MessageKind.ERROR:
            raise PartyError(f"{self.peer} failed: {msg.meta.get('problem')}", msg.meta.get("fix", ""))
        if expect and msg.kind != expect:
            raise PartyError(
                f"expected '{expect}' from {self.peer}, got '{msg.kind}'", "protocol mismatch: same hebench?"
            )
        return msg

    def tell_error(self, speaker: str, err: HebenchError) -> None:
        """Pass a failure on to the peer (it raises it as its own PartyError), if the peer still listens."""
        try:
            self.send(Message(MessageKind.ERROR, {"problem": f"{speaker}: {err.problem}", "fix": err.fix}))
        except PartyError:
            pass

    def hang_up(self) -> None:
        """Tell the peer this side is done (if it still listens), then close."""
        try:
            self.send(Message(MessageKind.DONE))
        except PartyError:
            pass
        self.close()

    def close(self) -> None:
        self.conn.close()
        if self._transcript:
            self._transcript.close()


# Every party of a run may connect at once: a backlog of 1 (multiprocessing's default) let the kernel
# complete connections the listener never accepted, and those parties stalled in the handshake.
BACKLOG = 1024


@dataclass
class Admitted:
    """A connection a door admitted, and who the peer proved to be (None at a shared-key door)."""

    conn: Connection | stream.FramedSocket
    party: str | None = None

    def close(self) -> None:
        self.conn.close()


class Door:
    """A listening socket that hands out only connections that proved ``authkey``.

    ``authkey`` is one shared key, or :class:`~hebench.net.door_keys.DoorKeys`: each admitted party's own key,
    and the connection then carries who the peer is. With ``tls`` (this party's certificates) a peer must first
    complete mutual TLS with a client certificate from the same CA, then the peer and the door prove the key to
    each other inside the TLS session (with door keys: the key of the party its certificate names; the key
    still binds the peer to its role, and a dialler never talks to a listener without it). Without TLS,
    multiprocessing's HMAC challenge runs both ways (it reads at most 256 bytes per frame), after the peer
    named its party (door keys).

    Each connection is authenticated on its own thread within ``handshake_s`` in a bounded pool that is fair
    per peer address (:class:`~hebench.net.admission.HandshakePool`): silent, slow or garbage peers never
    hold the door, and never keep a real party out. Refusals go to the ``hebench.net`` log and to
    ``on_refuse`` as :class:`~hebench.net.refusals.Refusal` notes counted per (peer address, kind), the
    last 100 lines to :attr:`refused`.
    """

    def __init__(
        self,
        authkey: bytes | DoorKeys,
        host: str = "127.0.0.1",
        port: int = 0,
        handshake_s: float = HANDSHAKE_S,
        on_refuse: Callable[[Refusal], None] | None = None,
        tls: TLSFiles | None = None,
    ) -> None:
        self._authkey, self._on_refuse = authkey, on_refuse
        self._tls = stream.server_context(tls.serving()) if tls is not None else None
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind((host, port))
        self._sock.listen(BACKLOG)
        self.address: Address = self._sock.getsockname()[:2]
        self.refused: deque[str] = deque(maxlen=100)
        self.notes = RefusalNotes(self._note)
        self._ready: queue.Queue[Admitted] = queue.Queue()
        self._pool = HandshakePool(handshake_s)
        self._handshake_s = handshake_s
        self._closed = False
        threading.Thread(target=self._accept_loop, daemon=True).start()

    def _accept_loop(self) -> None:
        while True:
            try:
                raw, peer = self._sock.accept()
            except OSError:
                return  # closed
            self._pool.start(raw, peer, self._handshake, self._admitted, self._refuse)

    def _handshake(self, raw: socket.socket) -> Admitted:
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self._tls is not None:
            return self._handshake_tls(raw)
        conn = Connection(raw.detach())
        keys, party = self._authkey, None
        try:
            if isinstance(keys, DoorKeys):
                party = claimed(conn.recv_bytes(MAX_CLAIM))
            key = keys.challenge_key(party) if isinstance(keys, DoorKeys) else keys
            try:
                deliver_challenge(conn, key)
            except AuthenticationError:
                if isinstance(keys, DoorKeys):
                    raise keys.refusal(party) from None
                raise
            answer_challenge(conn, key)
        except BaseException:
            conn.close()
            raise
        return Admitted(conn, party)

    def _handshake_tls(self, raw: socket.socket) -> Admitted:
        """Mutual TLS, then the door's key (door keys: that of the certificate's party) both ways inside it."""
        framed = stream.admit(raw, tls=self._tls, authkey=None, handshake_s=self._handshake_s)
        keys, party = self._authkey, None
        try:
            framed.deadline = time.monotonic() + self._handshake_s
            if isinstance(keys, DoorKeys):
                party = party_of(framed.peer_common_name())
            key = keys.challenge_key(party) if isinstance(keys, DoorKeys) else keys
            try:
                stream.challenge(framed, key)
            except PartyError:
                if isinstance(keys, DoorKeys):
                    raise keys.refusal(party) from None
                raise
            stream.answer(framed, key, "the peer")
            framed.trust()
        except BaseException:
            framed.close()
            raise
        return Admitted(framed, party)

    def _admitted(self, admitted: Admitted) -> None:
        if self._closed:
            admitted.close()
        else:
            self._ready.put(admitted)

    def _refuse(self, peer: Any, kind: str, error: BaseException | None) -> None:
        if self._closed:
            return
        why = error.problem if isinstance(error, PartyError) else str(error or "") or "closed"
        why = why.removeprefix("refused a peer: ")
        if self._tls is not None and kind == FAILED:
            kind = "failed TLS authentication"
        line = f"refused a peer at {peer[0]}:{peer[1]}: {kind} ({why})"
        self.refused.append(line)
        self.notes.add(str(peer[0]), kind, line)

    def _note(self, note: Refusal) -> None:
        line = note.problem if note.count == 1 else f"refused {note.count} peers at {note.peer}: {note.kind}"
        log.warning(line)
        if self._on_refuse is not None:
            self._on_refuse(note)

    def next(self, timeout_s: float | None) -> Connection | stream.FramedSocket:
        """The next authenticated connection; raises PartyError after ``timeout_s`` without one."""
        return self.next_admitted(timeout_s).conn

    def next_admitted(self, timeout_s: float | None) -> Admitted:
        """The next authenticated connection and who the peer proved to be; PartyError after ``timeout_s``."""
        try:
            return self._ready.get(timeout=timeout_s)
        except queue.Empty:
            raise PartyError(
                f"no party connected within {timeout_s:.0f} s", "check the other parties' errors"
            ) from None

    def close(self) -> None:
        """Stop listening, drop handshakes in flight, and report the refusals counted so far."""
        if self._closed:
            return
        self._closed = True
        try:
            self._sock.shutdown(socket.SHUT_RDWR)  # wakes the accept loop
        except OSError:
            pass
        self._sock.close()
        self._pool.close()
        while not self._ready.empty():
            self._ready.get_nowait().close()
        self.notes.flush()


def listen(
    authkey: bytes | DoorKeys, on_refuse: Callable[[Refusal], None] | None = None, tls: TLSFiles | None = None
) -> Door:
    """A door on a free loopback port (mutual TLS with ``tls``); ``on_refuse(note)`` hears of peers refused.

    In a run on the kernel backend the port is on the party's namespace address instead of loopback."""
    return Door(authkey, host=shaping.listen_host(), on_refuse=on_refuse, tls=tls)


def connect(
    address: Address,
    authkey: bytes,
    peer: str,
    timeout_s: float,
    transcript: Path | None = None,
    tls: TLSFiles | None = None,
    *,
    server: str | None = None,
    retry_s: float = SETUP_RETRY_S,
    party: str | None = None,
) -> Channel:
    """Dial a :class:`Door` and authenticate both ways within :data:`HANDSHAKE_S` per attempt (connect included).

    ``party``: who this side is, at a door that admits by party (``authkey`` is then this party's own key
    there); without TLS it is named first, under TLS the certificate names it. With ``tls`` (this party's
    certificates): mutual TLS first, where the door's certificate must name ``server`` (the party meant, e.g.
    ``aggregator``), then the key both ways inside the session. A door that drops the attempt before
    authentication finishes (busy with other handshakes) is dialled again with back-off until ``retry_s`` has
    passed; a refusal (wrong key, certificate) fails at once.
    """
    if tls is not None and not server:
        raise ParameterError(
            f"a TLS connection to {peer} names no party to expect", "pass server=<the party's name> to connect()"
        )
    if tls is not None:
        framed = with_backoff(lambda: _connect_tls(address, authkey, peer, tls, party_cn(server)), retry_s)
        return Channel(framed, peer, timeout_s, transcript)  # type: ignore[arg-type]
    conn = with_backoff(lambda: _connect_tcp(address, authkey, peer, party), retry_s)
    return Channel(conn, peer, timeout_s, transcript)


def _connect_tcp(address: Address, authkey: bytes, peer: str, party: str | None = None) -> Connection:
    try:
        raw = socket.create_connection(tuple(address), timeout=HANDSHAKE_S)
    except OSError as err:
        raise PartyError(f"cannot reach {peer} at {address[0]}:{address[1]}: {err}", "is that party running?") from None
    raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    raw.settimeout(None)
    conn = Connection(raw.detach())

    def steps() -> None:
        if party is not None:
            conn.send_bytes(claim(party))
        answer_challenge(conn, authkey)
        deliver_challenge(conn, authkey)

    try:
        _with_deadline(conn, HANDSHAKE_S, steps)
    except (AuthenticationError, OSError, EOFError) as err:
        conn.close()
        failure = PartyError(
            f"{peer} at {address[0]}:{address[1]} did not authenticate: {err or 'closed or too slow'}",
            "is that party running, with this run's key?",
        )
        if isinstance(err, DROPPED):
            raise Dropped(failure) from None
        raise failure from None
    return conn


def _connect_tls(address: Address, authkey: bytes, peer: str, tls: TLSFiles, expect: str) -> stream.FramedSocket:
    framed = stream.dial_once(tuple(address), tls, None, peer, HANDSHAKE_S, (expect,))  # type: ignore[arg-type]
    try:
        framed.deadline = time.monotonic() + HANDSHAKE_S
        stream.answer(framed, authkey, peer)
        stream.challenge(framed, authkey)
        framed.trust()
    except (PartyError, OSError, EOFError) as err:
        framed.close()
        why = err.problem if isinstance(err, PartyError) else str(err) or "closed or too slow"
        failure = PartyError(
            f"{peer} at {address[0]}:{address[1]} did not authenticate over TLS: {why}",
            "is that party running, with this run's key and a certificate from this run's CA?",
        )
        if isinstance(err, DROPPED):
            raise Dropped(failure) from None
        raise failure from None
    return framed


def _with_deadline(conn: Connection, seconds: float, steps: Callable[[], None]) -> None:
    """Run handshake ``steps`` on ``conn``; past ``seconds`` the socket is shut down, so they fail with EOF."""
    lock, state = threading.Lock(), {"finished": False, "expired": False}
    probe = socket.socket(fileno=os.dup(conn.fileno()))

    def expire() -> None:
        with lock:
            if state["finished"]:
                return
            state["expired"] = True
        try:
            probe.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    timer = threading.Timer(seconds, expire)
    timer.start()
    try:
        steps()
    finally:
        with lock:
            state["finished"] = True
        timer.cancel()
        probe.close()
    if state["expired"]:  # finished just as the deadline shut the socket: it cannot be used
        raise TimeoutError("the peer did not finish the handshake in time")


def accept(listener: Door, peer: str, timeout_s: float, transcript: Path | None = None) -> Channel:
    """The next authenticated party at ``listener``, within ``timeout_s`` (``party``: who it proved to be)."""
    admitted = listener.next_admitted(timeout_s)
    channel = Channel(admitted.conn, peer, timeout_s, transcript)  # type: ignore[arg-type]
    channel.party = admitted.party
    return channel


def write_frame(transcript: BinaryIO, frame: bytes) -> None:
    """Append one received frame to a transcript file."""
    transcript.write(struct.pack(">Q", len(frame)) + frame)
    transcript.flush()


def read_transcript(path: Path) -> list[Message]:
    """Every frame a party received, in order (for security scans)."""
    data, out, offset = path.read_bytes(), [], 0
    while offset < len(data):
        (n,) = struct.unpack(">Q", data[offset : offset + 8])
        out.append(decode(data[offset + 8 : offset + 8 + n]))
        offset += 8 + n
    return out
