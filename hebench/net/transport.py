"""Framed messages over authenticated TCP connections, with every byte counted.

Built on :mod:`multiprocessing.connection` (HMAC challenge on connect, length-
prefixed frames) but carrying only bytes: a JSON header and binary parts,
never pickles, so a peer cannot make another execute code. Optionally every
received frame is appended to a transcript file for security scans.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field
from multiprocessing import AuthenticationError
from multiprocessing.connection import Client, Connection, Listener
from pathlib import Path
from typing import Any, BinaryIO

from hebench.errors import HebenchError, PartyError

Address = tuple[str, int]


@dataclass(frozen=True)
class Message:
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
        parts, offset = [], 4 + n
        for size in head["sizes"]:
            parts.append(frame[offset : offset + size])
            offset += size
        if offset != len(frame):
            raise ValueError("frame length does not match its header")
        return Message(head["kind"], head["meta"], tuple(parts))
    except (struct.error, ValueError, KeyError, TypeError) as err:
        raise PartyError(
            f"malformed message from peer: {err}", "check that every party runs the same hebench"
        ) from None


class Channel:
    """One side of a connection; counts bytes both ways."""

    def __init__(self, conn: Connection, peer: str, timeout_s: float, transcript: Path | None = None) -> None:
        self.conn = conn
        self.peer = peer
        self.timeout_s = timeout_s
        self.bytes_sent = 0
        self.bytes_received = 0
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
            raise PartyError(f"lost connection to {self.peer} while sending: {err}", "see that party's error") from None
        self.bytes_sent += len(frame)
        return len(frame)

    def recv(self, expect: str | None = None) -> Message:
        try:
            if not self.conn.poll(self.timeout_s):
                raise PartyError(
                    f"no message from {self.peer} within {self.timeout_s:.0f} s",
                    "raise measure.timeout_s for slow adapters, or check that party's error",
                )
            frame = self.conn.recv_bytes()
        except (EOFError, OSError) as err:
            raise PartyError(f"{self.peer} closed the connection: {err or 'EOF'}", "see that party's error") from None
        self.bytes_received += len(frame)
        if self._transcript:
            write_frame(self._transcript, frame)
        msg = decode(frame)
        if msg.kind == "error":
            raise PartyError(f"{self.peer} failed: {msg.meta.get('problem')}", msg.meta.get("fix", ""))
        if expect and msg.kind != expect:
            raise PartyError(
                f"expected '{expect}' from {self.peer}, got '{msg.kind}'", "protocol mismatch: same hebench?"
            )
        return msg

    def tell_error(self, speaker: str, err: HebenchError) -> None:
        """Pass a failure on to the peer (it raises it as its own PartyError), if the peer still listens."""
        try:
            self.send(Message("error", {"problem": f"{speaker}: {err.problem}", "fix": err.fix}))
        except PartyError:
            pass

    def hang_up(self) -> None:
        """Tell the peer this side is done (if it still listens), then close."""
        try:
            self.send(Message("done"))
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


def listen(authkey: bytes) -> Listener:
    return Listener(("127.0.0.1", 0), family="AF_INET", backlog=BACKLOG, authkey=authkey)


def connect(address: Address, authkey: bytes, peer: str, timeout_s: float, transcript: Path | None = None) -> Channel:
    try:
        conn = Client(tuple(address), family="AF_INET", authkey=authkey)
    except AuthenticationError as err:
        raise PartyError(
            f"{peer} at {address[0]}:{address[1]} refused this party's credential: {err}",
            "a party may only use the doors of its own role",
        ) from None
    except (OSError, EOFError) as err:
        raise PartyError(f"cannot reach {peer} at {address[0]}:{address[1]}: {err}", "is that party running?") from None
    return Channel(conn, peer, timeout_s, transcript)


def accept(listener: Listener, peer: str, timeout_s: float, transcript: Path | None = None) -> Channel:
    """The next peer that proves it holds the listener's credential (a PartyError for one that does not)."""
    try:
        conn = listener.accept()
    except AuthenticationError as err:
        raise PartyError(f"refused {peer}: it does not hold this door's credential ({err})", "") from None
    except (OSError, EOFError) as err:
        raise PartyError(f"{peer} broke off the handshake: {err or 'EOF'}", "") from None
    return Channel(conn, peer, timeout_s, transcript)


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
