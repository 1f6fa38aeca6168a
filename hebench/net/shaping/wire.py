"""A connection whose every frame passes through its party's shaper, with the sender's timing in a stamp.

Before each frame the sender writes a small stamp frame: whether the channel stays inside the device (a host
and its own engine), when the frame's first and last byte leave the sender's uplink, and the sender's share of
the latency. The sender writes the frame at once and is then held until its last byte would be out; the
receiver reads the stamp and holds the frame as the path would (:class:`~hebench.net.shaping.shaper.PartyShaper`).
Stamps are hebench's own framing under :class:`~hebench.net.transport.Channel`: not counted as traffic, not
in transcripts. Both ends of every channel of a shaped run are shaped (a channel opened outside a party's
scope is refused, see :mod:`hebench.net.shaping.scope`).
"""

from __future__ import annotations

import struct
import threading
from typing import Any

from hebench.net.shaping.shaper import PartyShaper

STAMP = struct.Struct(">?ddd")  # on-device, first and last byte's departure, sender's latency


class ShapedConnection:
    """Wraps a connection with ``send_bytes``/``recv_bytes``/``poll`` (multiprocessing's, or a FramedSocket)."""

    def __init__(self, inner: Any, shaper: PartyShaper) -> None:
        self.inner, self.shaper = inner, shaper
        self.on_device = False  # set for a host's channel to its own engine; its peer learns it from the stamp
        self._send_lock = threading.Lock()

    def send_bytes(self, data: bytes) -> None:
        with self._send_lock:  # a stamp and its frame travel together
            if self.on_device:
                self.shaper.on_device(len(data))
                self.inner.send_bytes(STAMP.pack(True, 0.0, 0.0, 0.0))
                self.inner.send_bytes(data)
                return
            frame = self.shaper.send(len(data))
            self.inner.send_bytes(STAMP.pack(False, frame.start, frame.finish, frame.lag))
            self.inner.send_bytes(data)
            self.shaper.sent(frame)

    def recv_bytes(self, maxlength: int | None = None) -> bytes:
        stamp = self.inner.recv_bytes(max(STAMP.size, 256))
        data = self.inner.recv_bytes(maxlength) if maxlength is not None else self.inner.recv_bytes()
        try:
            on_device, first_byte, last_byte, lag = STAMP.unpack(stamp)
        except struct.error:
            raise EOFError("a frame without its shaper stamp: the peer is not shaped as this run is") from None
        if on_device:
            self.on_device = True
            self.shaper.on_device(len(data))
        else:
            self.shaper.receive(len(data), first_byte, last_byte, lag)
        return data

    def poll(self, timeout: float | None = None) -> bool:
        return self.inner.poll(timeout)

    def close(self) -> None:
        self.inner.close()

    def __getattr__(self, name: str) -> Any:  # fileno, peer_common_name, trust, ...
        return getattr(self.inner, name)
