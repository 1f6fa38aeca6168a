"""How a client's update reaches the aggregator, and the aggregate comes back (local runtime).

The client's round is the same in every mode; the link is what differs. A
:class:`DirectLink` talks to the aggregator itself and encrypts with a
:class:`~hebench.fl.cipher.Cipher` (raw, host-he). The offload link
(:mod:`hebench.offload.link`) streams plaintext to the client's engine, which
encrypts, forwards the ciphertext to the aggregator as the client's proxy and
returns the decrypted aggregate.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

import numpy as np

from hebench.crypto import load_adapter
from hebench.fl.cipher import Cipher, KeyHolderCipher, plain_cipher
from hebench.fl.keyring import KeyRing
from hebench.fl.meter import PhaseMeter
from hebench.fl.party import PartyContext, Wiring
from hebench.fl.shared_keys import SHARED_KEYS
from hebench.modes import KeyHolders
from hebench.net.transport import Channel, Message, connect
from hebench.results.fields import EngineReport
from hebench.selective.split import PLAIN, parts_of


@dataclass(frozen=True)
class Opened:
    """An aggregate as the client gets it: the decrypted part, the plaintext part, the FedAvg weights."""

    encrypted: np.ndarray
    plain: np.ndarray
    weights: dict[str, float]
    engine: EngineReport | None = None  # the engine's measurements for this round (offload)


class Link(ABC):
    """One client's connection to the round: instructions arrive on ``channel``; acknowledgements go back on it."""

    channel: Channel
    reply_kinds: dict[str, str]  # instruction kind -> the kind of the aggregate that answers it

    @abstractmethod
    def upload(
        self, meta: dict[str, Any], encrypted: list[np.ndarray], plain: np.ndarray | None, meter: PhaseMeter
    ) -> None:
        """Send one update (``encrypted`` pieces, and the plaintext part of a selective update)."""

    @abstractmethod
    def open(self, msg: Message, epoch: int, meter: PhaseMeter) -> Opened:
        """The vector parts of an aggregate message."""

    def traffic(self) -> tuple[int, int]:
        """(bytes sent, bytes received) on every channel of this client's round so far."""
        return self.channel.bytes_sent, self.channel.bytes_received

    def close(self) -> None:
        self.channel.close()


class DirectLink(Link):
    """The client talks to the aggregator itself and encrypts with its cipher (raw, host-he)."""

    reply_kinds = {"train": "aggregate", "map": "map_sum"}  # noqa: RUF012 - read only

    def __init__(self, aggregator: Channel, cipher: Cipher) -> None:
        self.channel, self.cipher = aggregator, cipher

    def upload(
        self, meta: dict[str, Any], encrypted: list[np.ndarray], plain: np.ndarray | None, meter: PhaseMeter
    ) -> None:
        blobs = self.cipher.encrypt(encrypted, int(meta["epoch"]), meter)
        if plain is not None:
            with meter.phase("serialize"):
                blobs = (*blobs, PLAIN.serialize(PLAIN.encrypt(plain)))
        with meter.phase("send"):
            self.channel.send(Message("update", {**meta, "plain_parts": int(plain is not None)}, blobs))

    def open(self, msg: Message, epoch: int, meter: PhaseMeter) -> Opened:
        cipher, plain = parts_of(msg.parts, int(msg.meta.get("plain_parts", 0)))
        encrypted = self.cipher.decrypt(cipher, epoch, meter)
        with meter.phase("deserialize"):
            clear = [PLAIN.decrypt(PLAIN.deserialize(b)) for b in plain]
        return Opened(encrypted, np.concatenate(clear) if clear else np.empty(0, np.float32), msg.meta["weights"])

    def close(self) -> None:
        self.cipher.close()
        super().close()


def direct_link(ctx: PartyContext, wiring: Wiring, samples: int, meter: PhaseMeter) -> Link:
    """raw (plaintext, no keys) or a key-holding client (host-he: keys pushed by the key authority)."""
    index, creds = ctx.client_index, ctx.credentials
    cipher = plain_cipher()
    if ctx.config.spec.key_holders is KeyHolders.CLIENTS:
        assert wiring.key_authority is not None and creds.key_holder is not None
        with meter.phase("keys"):
            ka = connect(
                wiring.key_authority,
                creds.key_holder,
                "key authority",
                ctx.timeout_s,
                ctx.transcript(f"client-{index}-keys"),
                tls=ctx.tls_for(f"client-{index}"),
                server="key-authority",
                retry_s=ctx.suite.measure.setup_timeout_s,
            )
            ka.send(Message("hello", {"role": "client", "client": index}))
        load = SHARED_KEYS.load if ctx.worker is not None else load_adapter  # pool threads share a loaded set
        ring = KeyRing(source=ka, timeout_s=ctx.timeout_s, load=load)
        cipher = KeyHolderCipher(ring.get, require_secret=True, on_close=ka.close)
    assert creds.aggregator is not None
    transcript, tls = ctx.transcript(f"client-{index}"), ctx.tls_for(f"client-{index}")
    agg = connect(
        wiring.aggregator,
        creds.aggregator,
        "aggregator",
        ctx.timeout_s,
        transcript,
        tls=tls,
        server="aggregator",
        retry_s=ctx.suite.measure.setup_timeout_s,
    )
    agg.send(Message("hello", {"role": "client", "client": index, "samples": samples}))
    return DirectLink(agg, cipher)
