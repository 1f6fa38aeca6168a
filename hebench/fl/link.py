"""How a client's update reaches the aggregator, and the aggregate comes back (local runtime).

The client's round is the same in every mode; the link is what differs. A
:class:`DirectLink` talks to the aggregator itself and encrypts with a
:class:`~hebench.fl.cipher.Cipher` (raw, host-he). The offload link
(:mod:`hebench.protections.offload.link`) streams plaintext to the client's engine, which
encrypts, forwards the ciphertext to the aggregator as the client's proxy and
returns the decrypted aggregate.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

import numpy as np

from hebench.crypto import load_adapter
from hebench.crypto.exact_weights import PreWeight
from hebench.fl.chunks import DEFAULT_CHUNK_VALUES, chunks_of
from hebench.fl.cipher import Cipher, KeyHolderCipher, plain_cipher
from hebench.fl.keyring import KeyRing
from hebench.fl.meter import PhaseMeter
from hebench.fl.party import AGGREGATOR_DOOR, KEY_HOLDERS_DOOR, PartyContext, Wiring, client_party
from hebench.fl.shared_keys import SHARED_KEYS
from hebench.fl.streams import AGGREGATE_CHUNKS, read_aggregate
from hebench.net.messages import MessageKind
from hebench.net.transport import Channel, Message, connect
from hebench.protections import KeyHolders
from hebench.protections.selective.split import PLAIN
from hebench.results.fields import EngineReport


@dataclass(frozen=True)
class Opened:
    """An aggregate as the client gets it: the decrypted part, the plaintext part, the FedAvg weights."""

    encrypted: np.ndarray
    plain: np.ndarray
    weights: dict[str, float]
    engine: EngineReport | None = None  # the engine's measurements for this round (offload)
    weight_total: float = 1.0  # the FedAvg weights the sum carries, added up (< 1 when clients dropped out)
    skipped: bool = False  # too few clients arrived: no aggregate (the global model stays)
    failed: str | None = None  # why this client found the round has no aggregate (told in its ack): skipped

    @classmethod
    def survivors_of(cls, meta: dict[str, Any]) -> dict[str, Any]:
        """The fault fields of an aggregate's end message (:mod:`hebench.faults`), as keyword arguments."""
        return {"weight_total": float(meta.get("weight_total", 1.0)), "skipped": bool(meta.get("skipped", False))}


class Link(ABC):
    """One client's connection to the round: instructions arrive on ``channel``; acknowledgements go back on it."""

    channel: Channel
    reply_kinds: dict[str, str]  # instruction kind -> the kind of the aggregate that answers it
    chunk_kinds: tuple[str, str] = AGGREGATE_CHUNKS  # the kinds an aggregate streams in before its end message

    @abstractmethod
    def upload(
        self, meta: dict[str, Any], encrypted: list[np.ndarray], plain: np.ndarray | None, meter: PhaseMeter
    ) -> None:
        """Send one update (``encrypted`` pieces, and the plaintext part of a selective update)."""

    @abstractmethod
    def open(self, msg: Message, epoch: int, meter: PhaseMeter) -> Opened:
        """The vector parts of an aggregate whose first message is ``msg`` (a chunk, or its end message)."""

    def starts_aggregate(self, kind: str, end: str) -> bool:
        """True when a message of ``kind`` begins an aggregate that ends with ``end``."""
        return kind == end or kind in self.chunk_kinds

    def end_of(self, first: Message) -> str:
        """The end kind of the aggregate ``first`` begins: a training round's, or the mask agreement's (round -1)."""
        if first.kind in self.reply_kinds.values():
            return first.kind
        return self.reply_kinds[MessageKind.MAP if int(first.meta.get("round", 0)) < 0 else MessageKind.TRAIN]

    leaving: str | None = None  # this round's drawn dropout phase (a link whose protocol has stages may use it)

    def leave(self, round_index: int, phase: str) -> None:
        """Leave the round without uploading (a simulated dropout, or late: :mod:`hebench.faults`): the
        aggregator closes the round with the others, as it would when this client's connection closed."""
        self.channel.send(Message(MessageKind.LEAVE, {"round": round_index, "phase": phase}))

    def traffic(self) -> tuple[int, int]:
        """(bytes sent, bytes received) on every channel of this client's round so far."""
        return self.channel.bytes_sent, self.channel.bytes_received

    def close(self) -> None:
        self.channel.close()


class DirectLink(Link):
    """The client talks to the aggregator itself and encrypts with its cipher (raw, host-he).

    An update streams out chunk by chunk, each encrypted, serialised and sent before the next is encrypted;
    an aggregate streams in the same way, each chunk decrypted into place (:mod:`hebench.fl.streams`).
    ``meta["pre"]``: this client's FedAvg weight, applied before encryption (compact adapters).
    """

    reply_kinds = {MessageKind.TRAIN: MessageKind.AGGREGATE, MessageKind.MAP: MessageKind.MAP_SUM}  # noqa: RUF012 - read only

    def __init__(self, aggregator: Channel, cipher: Cipher, chunk_values: int = DEFAULT_CHUNK_VALUES) -> None:
        self.channel, self.cipher, self.chunk_values = aggregator, cipher, chunk_values

    def upload(
        self, meta: dict[str, Any], encrypted: list[np.ndarray], plain: np.ndarray | None, meter: PhaseMeter
    ) -> None:
        head = {k: v for k, v in meta.items() if k != "pre"}
        r, epoch = int(meta["round"]), int(meta["epoch"])
        pre = PreWeight.from_json(meta["pre"]) if meta.get("pre") else None
        for blob in self.cipher.encrypt_stream(encrypted, epoch, meter, self.chunk_values, pre):
            with meter.phase("send"):
                self.channel.send(Message(MessageKind.UPDATE_CHUNK, {"round": r}, (blob,)))
        if plain is not None:
            for chunk in chunks_of([plain], self.chunk_values):
                with meter.phase("serialize"):
                    blob = PLAIN.serialize(PLAIN.encrypt(chunk))
                with meter.phase("send"):
                    self.channel.send(Message(MessageKind.PLAIN_PART, {"round": r}, (blob,)))
        with meter.phase("send"):
            self.channel.send(Message(MessageKind.UPDATE_END, head))

    def open(self, msg: Message, epoch: int, meter: PhaseMeter) -> Opened:
        def decrypt(blob: bytes) -> np.ndarray:
            return self.cipher.decrypt_chunk(blob, epoch, meter)

        encrypted, clear, last = read_aggregate(self.channel, msg, self.end_of(msg), self.chunk_kinds, decrypt, meter)
        return Opened(encrypted, clear, last.meta["weights"], **Opened.survivors_of(last.meta))

    def close(self) -> None:
        self.cipher.close()
        super().close()


def _dial(ctx: PartyContext, address: Any, door: str, server: str, transcript: str) -> Channel:
    """This client's channel to ``server`` at ``door`` (with its own key there; its certificate name and
    transcript), within set-up's retry."""
    assert address is not None
    party = client_party(ctx.client_index)
    return connect(
        address,
        ctx.credentials.key(door),
        server.replace("-", " "),
        ctx.timeout_s,
        ctx.transcript(transcript),
        tls=ctx.tls_for(party),
        server=server,
        retry_s=ctx.suite.measure.setup_timeout_s,
        party=party,
    )


def dial_key_authority(ctx: PartyContext, wiring: Wiring) -> Channel:
    """This client's channel to the key authority (key holders' door), hello sent."""
    index = ctx.client_index
    ka = _dial(ctx, wiring.key_authority, KEY_HOLDERS_DOOR, "key-authority", f"client-{index}-keys")
    ka.send(Message(MessageKind.HELLO, {"role": "client", "client": index}))
    return ka


def dial_aggregator(ctx: PartyContext, wiring: Wiring, samples: int) -> Channel:
    """This client's channel to the aggregator, hello (with its sample count) sent."""
    index = ctx.client_index
    agg = _dial(ctx, wiring.aggregator, AGGREGATOR_DOOR, "aggregator", f"client-{index}")
    agg.send(Message(MessageKind.HELLO, {"role": "client", "client": index, "samples": samples}))
    return agg


def direct_link(ctx: PartyContext, wiring: Wiring, samples: int, meter: PhaseMeter) -> Link:
    """raw (plaintext, no keys) or a key-holding client (host-he: keys pushed by the key authority)."""
    cipher = plain_cipher()
    if ctx.config.spec.key_holders is KeyHolders.CLIENTS:
        with meter.phase("keys"):
            ka = dial_key_authority(ctx, wiring)
        load = SHARED_KEYS.load if ctx.worker is not None else load_adapter  # pool threads share a loaded set
        ring = KeyRing(source=ka, timeout_s=ctx.timeout_s, load=load)  # takes pushes as they arrive
        cipher = KeyHolderCipher(ring.get, require_secret=True, on_close=ring.close)
    return DirectLink(dial_aggregator(ctx, wiring, samples), cipher, ctx.suite.runtime.chunk_values)
