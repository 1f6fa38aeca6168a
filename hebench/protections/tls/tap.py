"""A network observer's tap: a TCP relay between two parties that keeps every byte it forwards, and what an observer
can read out of them.

Put between a dialler and a door (the dialler is given the tap's address), it forwards both ways untouched and keeps
each direction's bytes. Without TLS the bytes are hebench's frames as :mod:`multiprocessing.connection` writes them
(a 4-byte big-endian length, or -1 and an 8-byte length, then the frame): :func:`messages` decodes every frame that
is a hebench message, as any observer who knows the (public) wire format would. Under TLS they are TLS records
(:func:`only_tls_records`), and nothing in them decodes.
"""

from __future__ import annotations

import socket
import struct
import threading

from hebench.errors import PartyError
from hebench.net.transport import Address, Message, decode

TO_LISTENER = "to listener"  # what the dialler sent
TO_DIALLER = "to dialler"  # what the door sent back


class WireTap:
    """A relay for one connection to ``target``; :attr:`address` is where the dialler should connect."""

    def __init__(self, target: Address) -> None:
        self.target = target
        self.streams = {TO_LISTENER: bytearray(), TO_DIALLER: bytearray()}
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.address: Address = self.sock.getsockname()[:2]
        self._pipes: list[threading.Thread] = []
        self._serving = threading.Thread(target=self._serve, daemon=True)
        self._serving.start()

    def _serve(self) -> None:
        try:
            inbound, _ = self.sock.accept()
            outbound = socket.create_connection(self.target)
        except OSError:
            return
        finally:
            self.sock.close()
        for a, b, way in ((inbound, outbound, TO_LISTENER), (outbound, inbound, TO_DIALLER)):
            self._pipes.append(threading.Thread(target=self._pipe, args=(a, b, way), daemon=True))
            self._pipes[-1].start()

    def _pipe(self, src: socket.socket, dst: socket.socket, way: str) -> None:
        try:
            while data := src.recv(1 << 16):
                self.streams[way] += data
                dst.sendall(data)
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    def finished(self, timeout_s: float = 30.0) -> dict[str, bytes]:
        """Both directions, once both parties closed the connection (or ``timeout_s`` passed)."""
        self._serving.join(timeout_s)
        for pipe in self._pipes:
            pipe.join(timeout_s)
        return {way: bytes(stream) for way, stream in self.streams.items()}


def frames(stream: bytes) -> list[bytes]:
    """The length-prefixed frames of an unencrypted stream, in order; stops at the first length that does not fit
    (a TLS stream yields nothing usable)."""
    out, at = [], 0
    while at + 4 <= len(stream):
        (size,) = struct.unpack(">i", stream[at : at + 4])
        at += 4
        if size == -1 and at + 8 <= len(stream):
            (size,) = struct.unpack(">Q", stream[at : at + 8])
            at += 8
        if size < 0 or at + size > len(stream):
            break
        out.append(stream[at : at + size])
        at += size
    return out


def messages(stream: bytes) -> list[Message]:
    """Every hebench message an observer decodes from an unencrypted stream (the handshake's frames are not)."""
    found = []
    for frame in frames(stream):
        try:
            found.append(decode(frame))
        except PartyError:
            continue
    return found


def only_tls_records(stream: bytes) -> bool:
    """Whether ``stream`` is a sequence of whole TLS records (type 20-23, version 3.x, at most 2^14 + 2048)."""
    at = 0
    while at < len(stream):
        if at + 5 > len(stream):
            return False
        kind, major, minor = stream[at], stream[at + 1], stream[at + 2]
        size = int.from_bytes(stream[at + 3 : at + 5], "big")
        if kind not in (20, 21, 22, 23) or major != 3 or not 1 <= minor <= 4 or size > 2**14 + 2048:
            return False
        at += 5 + size
    return at == len(stream)
