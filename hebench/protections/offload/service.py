"""A request/reply engine session: encrypt this, decrypt that, return the result to the caller.

Used where the host's framework carries the ciphertext itself (a Flower
client mod hands its update to the engine and sends what comes back), so the
engine does not dial an aggregator. The secret key still never leaves the
engine: the caller gets ciphertext for plaintext and plaintext for ciphertext,
each reply with the engine's own per-request measurements. Decryption is not on
tap: every request counts against what the engine may open for this host in the
run (:mod:`hebench.fl.allowance`), the round it names (if any) at most one
aggregate of the model's length.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import numpy as np

from hebench.errors import PartyError
from hebench.fl.allowance import Decryptions
from hebench.fl.keyring import KeyRing
from hebench.fl.meter import PhaseMeter
from hebench.net.messages import MessageKind
from hebench.net.transport import Channel, Message


class ServiceSession:
    def __init__(self, keys: KeyRing, caller: Channel, decryptions: Callable[[], Decryptions]) -> None:
        self.keys, self.caller, self.decryptions = keys, caller, decryptions
        self.meter = PhaseMeter()

    def run(self) -> None:
        while (msg := self.caller.recv()).kind != MessageKind.DONE:
            with self.meter.phase("keys"):
                adapter = self.keys.get(int(msg.meta["epoch"]))
            if msg.kind == MessageKind.ENCRYPT:
                values = np.frombuffer(msg.parts[0], dtype="<f4")
                with self.meter.phase("encrypt"):
                    enc = adapter.encrypt(values) if len(values) else None
                with self.meter.phase("serialize"):
                    parts: tuple[bytes, ...] = (adapter.serialize(enc),) if enc is not None else ()
                reply = MessageKind.CIPHERTEXTS
            elif msg.kind == MessageKind.DECRYPT:
                with self.meter.phase("deserialize"):
                    encs = [adapter.deserialize(p) for p in msg.parts]
                named = msg.meta.get("round")
                self.decryptions().admit(None if named is None else int(named), sum(e.length for e in encs))
                with self.meter.phase("decrypt"):
                    decrypted = [adapter.decrypt(e) for e in encs]
                vector = (np.concatenate(decrypted) if decrypted else np.empty(0)).astype("<f4")
                parts, reply = (vector.tobytes(),), MessageKind.PLAINTEXT
            else:
                raise PartyError(f"unknown request '{msg.kind}'", "send 'encrypt', 'decrypt' or 'done'")
            report = {"cores": sorted(os.sched_getaffinity(0)), **self.meter.take()}
            self.caller.send(Message(reply, {"engine": report}, parts))
