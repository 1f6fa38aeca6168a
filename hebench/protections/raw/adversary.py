"""The red team's aggregator of the direct link (raw, host-he): it speaks the real message kinds to hebench's own
clients and lies.

:class:`LyingAggregator` keeps every upload apart (never only their sum), and hands each client the global model it
chooses: the "aggregate" a client opens is whatever this aggregator sends, so it can give the victim one model and
the others another (model inconsistency, Pasquini et al., CCS 2022) or every client a trap model (Robbing the Fed,
Fowl et al., ICLR 2022). Under host-he it encrypts what it hands out under the epoch's public set, as any holder of
the public set can. It reads what it can: plaintext chunks always, ciphertext only with a secret set a colluding
client handed it.

:func:`red_team_view` is raw's red-team conduit (:mod:`hebench.protections.red_team`): two rounds of a live
direct round (:mod:`hebench.protections.raw.live_round`), the first handing each client its model, the second
reading each upload.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from hebench.config import Configuration
from hebench.crypto import HEAdapter, load_adapter
from hebench.errors import CiphertextError
from hebench.fl.aggregator import receive_update
from hebench.fl.chunks import chunks_of, values_per_chunk
from hebench.fl.value_range import ValueRange
from hebench.net.messages import MessageKind
from hebench.net.transport import Message
from hebench.protections.raw.live_round import Aggregation, HeldModel, run_round
from hebench.protections.red_team import Seen, Target
from hebench.protections.selective.split import PLAIN, join, parts_of, split


@dataclass(frozen=True)
class Upload:
    """One client's upload as the aggregator received it: ciphertext blobs, then plaintext blobs."""

    meta: dict
    cipher: tuple[bytes, ...]
    plain: tuple[bytes, ...]


@dataclass(frozen=True)
class Read:
    """What the aggregator reads of one upload: the values (None: nothing) and which coordinates it read."""

    values: np.ndarray | None
    visible: np.ndarray | None = None  # True where read (None: every coordinate, or none)


@dataclass
class Played:
    """A lying round's result: the aggregator (to read with), each client's upload of the round it read, and the
    models it handed out."""

    liar: LyingAggregator
    uploads: dict[int, Upload] = field(default_factory=dict)
    handed: dict[int, np.ndarray] = field(default_factory=dict)


class LyingAggregator:
    """A cheating aggregator over :class:`~hebench.protections.raw.live_round.Aggregation`'s door and key channel."""

    def __init__(self, aggregation: Aggregation, epoch: int = 0) -> None:
        self.aggregation, self.epoch = aggregation, epoch
        self.channels = aggregation.admit()
        aggregation.ka.send(Message(MessageKind.EPOCH, {"epoch": epoch}))  # the key holders get the set first
        self.public = load_adapter(aggregation.ka.recv(MessageKind.KEYS).parts[0])  # public keys only

    def hand(self, r: int, models: Mapping[int, np.ndarray], encrypted: np.ndarray | None = None) -> None:
        """Round ``r``'s "aggregate", each client its own: the model this aggregator wants it to hold (encrypted
        under the public set where the mode encrypts; a selective mask's plaintext part in the clear)."""
        chunk = values_per_chunk(self.public, self.aggregation.ctx.suite.runtime.chunk_values)
        limit = ValueRange.of(self.aggregation.ctx.config)
        for i, ch in self.channels.items():
            secret, clear = split(np.asarray(models[i], dtype=np.float32), encrypted)
            if limit is not None:  # a compact adapter carries no value beyond its range: the nearest model it does
                secret = np.clip(secret, -limit.clip, limit.clip)
            blobs = [self.public.serialize(self.public.encrypt(c)) for c in chunks_of([secret], chunk)]
            plain = [PLAIN.serialize(PLAIN.encrypt(clear))] if encrypted is not None else []
            meta = {"round": r, "epoch": self.epoch, "weights": {}, "plain_parts": len(plain)}
            ch.send(Message(MessageKind.AGGREGATE, meta, (*blobs, *plain)))
        for ch in self.channels.values():
            ch.recv(MessageKind.ACK)

    def train(self, r: int) -> dict[int, Upload]:
        """Round ``r``: every client trains and uploads; each upload is kept apart."""
        for ch in self.channels.values():
            ch.send(Message(MessageKind.TRAIN, {"round": r, "epoch": self.epoch, "selected": sorted(self.channels)}))
        uploads = {}
        for i, ch in self.channels.items():
            meta, parts = receive_update(ch)
            cipher, plain = parts_of(parts, int(meta.get("plain_parts", 0)))
            uploads[i] = Upload(meta, cipher, plain)
        return uploads

    def read(self, upload: Upload, encrypted: np.ndarray | None = None, key_set: HEAdapter | None = None) -> Read:
        """What this aggregator reads of ``upload``: its ciphertext with ``key_set`` (its own public set when
        None: nothing, unless the mode sends plaintext), its plaintext part as it came."""
        return read_upload(upload, key_set or self.public, encrypted)


def in_model_units(read: Read, config: Configuration, held: np.ndarray, sizes: tuple[int, ...]) -> Read:
    """A read upload of a compact adapter's configuration in the model's units: its clients divide each tensor by a
    power of two derived from the global model they hold (:mod:`hebench.fl.value_range`), which whoever handed
    them that model derives too."""
    limit = ValueRange.of(config)
    if limit is None or read.values is None:
        return read
    values = read.values.copy()
    limit.fit_vector(np.asarray(held, dtype=np.float32), list(sizes)).restore(values)
    return Read(values, read.visible)


def read_upload(upload: Upload, keys: HEAdapter, encrypted: np.ndarray | None = None) -> Read:
    """What a holder of ``keys`` reads of ``upload``: its ciphertext where ``keys`` open it (the adapter refuses a
    public set, or another adapter's or key's ciphertext), the plaintext part of a selective upload always."""
    try:
        secret = np.concatenate([keys.decrypt(keys.deserialize(b)) for b in upload.cipher] or [np.empty(0)])
    except CiphertextError:
        secret = None
    clear = np.concatenate([PLAIN.decrypt(PLAIN.deserialize(b)) for b in upload.plain] or [np.empty(0)])
    if encrypted is None:
        return Read(None if secret is None else secret.astype(np.float32))
    if secret is None:  # the plaintext coordinates only
        return Read(join(np.zeros(int(encrypted.sum()), np.float32), clear, encrypted), ~encrypted)
    return Read(join(secret.astype(np.float32), clear, encrypted))


def play(models: Mapping[int, np.ndarray], encrypted: np.ndarray | None = None) -> Callable[[Aggregation], Played]:
    """The lying rounds: round 0 hands each client its model, round 1 reads every upload apart (then hands each
    client its own model back, so that the clients finish the round as hebench's do)."""

    def serve(aggregation: Aggregation) -> Played:
        liar = LyingAggregator(aggregation)
        liar.hand(0, models, encrypted)
        uploads = liar.train(1)
        liar.hand(1, models, encrypted)
        return Played(liar, uploads, dict(models))

    return serve


def configuration(target: Target) -> dict:
    """The target's configuration, as a suite writes it."""
    config = {"mode": target.mode, "adapter": target.adapter, "params": dict(target.params)}
    return {**config, "transport": target.transport}


def clients_of(target: Target) -> Callable:
    """Each client's model side: it trains as the target says, and encrypts as the target's mask says."""
    return lambda ctx: HeldModel(ctx.client_index, target.sizes, target.train, target.encrypted)


def victims_mean(reads: list[Read]) -> Seen:
    """The FedAvg of the victims' uploads as read (nothing if any of them was not read)."""
    if not reads or any(r.values is None for r in reads):
        return Seen(None)
    mean = np.mean([r.values for r in reads], axis=0).astype(np.float32)  # type: ignore[misc]
    return Seen(mean, reads[0].visible)


def red_team_view(target: Target) -> Seen:
    """raw: the lying aggregator hands each client the target's model and reads every upload in plaintext; colluding
    clients add nothing it lacks. (The observer's view is :func:`hebench.protections.tls.adversary.observer_view`.)"""
    live = run_round(configuration(target), target.clients, play(dict(enumerate(target.models))), clients_of(target))
    if live.served is None:
        return Seen(None, detected=live.server_error or next(iter(live.refusals.values()), None))
    played = live.served
    return victims_mean([played.liar.read(played.uploads[i]) for i in range(target.victims)])
