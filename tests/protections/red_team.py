"""What the red-team tests of several protections share: a party's control pipe, and an observer's reading of
the wire (frames off a tap, decoded as the parties decode them)."""

from __future__ import annotations

import queue
import struct
from typing import Any

from hebench.errors import PartyError
from hebench.net.transport import Message, decode


class Control:
    """A helper party's control pipe, as the runtime drives it: ``told`` in order on recv, replies kept."""

    def __init__(self, *told: Any) -> None:
        self.told = list(told)
        self.replies: queue.Queue = queue.Queue()

    def recv(self) -> Any:
        return self.told.pop(0)

    def send(self, item: Any) -> None:
        self.replies.put(item)


def wire_messages(stream: bytes, header: str = "!i") -> list[Message]:
    """Every hebench message in one direction of a TCP connection, as an observer reads it: the frames
    (multiprocessing's 4-byte length prefix; ``>Q`` for an engine's framed socket), those that decode as messages
    (the handshake's frames do not)."""
    size, at, found = struct.calcsize(header), 0, []
    while at + size <= len(stream):
        (n,) = struct.unpack(header, stream[at : at + size])
        if n == -1:  # multiprocessing's long form: an 8-byte length follows
            (n,) = struct.unpack("!Q", stream[at + size : at + size + 8])
            at += 8
        frame = stream[at + size : at + size + n]
        at += size + n
        try:
            found.append(decode(frame))
        except PartyError:
            continue
    return found
