"""An engine as a cipher: the caller sends plaintext and gets ciphertext back (and the reverse).

Used where the host's framework carries the ciphertext itself (a Flower client
mod), so the engine does not dial an aggregator; its session is
:class:`hebench.protections.offload.service.ServiceSession`. This process never holds a key.
"""

from __future__ import annotations

import numpy as np

from hebench.fl.cipher import Cipher
from hebench.fl.meter import PhaseMeter
from hebench.net.messages import MessageKind
from hebench.net.transport import Channel, Message


class EngineCipher(Cipher):
    def __init__(self, engine: Channel) -> None:
        super().__init__()
        self.channel = engine

    def _ask(self, kind: str, epoch: int, parts: tuple[bytes, ...], meter: PhaseMeter) -> Message:
        before = self.channel.bytes_sent + self.channel.bytes_received
        with meter.phase("send"):
            self.channel.send(Message(kind, {"epoch": epoch}, parts))
        with meter.phase("wait"):
            reply = self.channel.recv()
        self.engine_bytes += self.channel.bytes_sent + self.channel.bytes_received - before
        self.engine_reports.append(reply.meta["engine"])
        return reply

    def encrypt(self, pieces: list[np.ndarray], epoch: int, meter: PhaseMeter) -> tuple[bytes, ...]:
        values = np.concatenate(pieces) if pieces else np.empty(0, np.float32)
        return self._ask(MessageKind.ENCRYPT, epoch, (values.astype("<f4").tobytes(),), meter).parts

    def decrypt(self, blobs: tuple[bytes, ...], epoch: int, meter: PhaseMeter) -> np.ndarray:
        return np.frombuffer(self._ask(MessageKind.DECRYPT, epoch, blobs, meter).parts[0], dtype="<f4")

    def close(self) -> None:
        self.channel.hang_up()
