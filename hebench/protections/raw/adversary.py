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
    """A lying round's result: the aggregator (to read with), the round it read, each client's upload of that round,
    and the models it handed out first (empty: it handed none, the clients kept the run's initial model)."""

    liar: LyingAggregator
    round: int
    uploads: dict[int, Upload] = field(default_factory=dict)
    handed: dict[int, np.ndarray] = field(default_factory=dict)
    notes: tuple[str, ...] = ()


class LyingAggregator:
    """A cheating aggregator over :class:`~hebench.protections.raw.live_round.Aggregation`'s door and key channel."""

    def __init__(self, aggregation: Aggregation, epoch: int = 0) -> None:
        self.aggregation, self.epoch = aggregation, epoch
        self.channels = aggregation.admit()
        aggregation.ka.send(Message(MessageKind.EPOCH, {"epoch": epoch}))  # the key holders get the set first
        self.public = load_adapter(aggregation.ka.recv(MessageKind.KEYS).parts[0])  # public keys only

    def hand(self, r: int, models: Mapping[int, np.ndarray], encrypted: np.ndarray | None = None) -> None:
        """Round ``r``'s "aggregate", each client its own: the model this aggregator wants it to hold (encrypted
        under the public set where the mode encrypts; a selective mask's plaintext part in the clear). Every
        message is built before any is sent: a public set that cannot encrypt raises ``CiphertextError`` first."""
        chunk = values_per_chunk(self.public, self.aggregation.ctx.suite.runtime.chunk_values)
        limit = ValueRange.of(self.aggregation.ctx.config)
        messages = {}
        for i in self.channels:
            secret, clear = split(np.asarray(models[i], dtype=np.float32), encrypted)
            if limit is not None:  # a compact adapter carries no value beyond its range: the nearest model it does
                secret = np.clip(secret, -limit.clip, limit.clip)
            blobs = [self.public.serialize(self.public.encrypt(c)) for c in chunks_of([secret], chunk)]
            plain = [PLAIN.serialize(PLAIN.encrypt(clear))] if encrypted is not None else []
            meta = {"round": r, "epoch": self.epoch, "weights": {}, "plain_parts": len(plain)}
            messages[i] = Message(MessageKind.AGGREGATE, meta, (*blobs, *plain))
        for i, ch in self.channels.items():
            ch.send(messages[i])
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

    def hand_back(self, r: int, uploads: Mapping[int, Upload]) -> None:
        """Round ``r``'s aggregate, each client its own upload back (any ciphertext it received will do: no key is
        needed), so that the clients finish the round as hebench's do."""
        for i, ch in self.channels.items():
            upload = uploads[i]
            meta = {"round": r, "epoch": self.epoch, "weights": {}, "plain_parts": len(upload.plain)}
            ch.send(Message(MessageKind.AGGREGATE, meta, (*upload.cipher, *upload.plain)))
        for ch in self.channels.values():
            ch.recv(MessageKind.ACK)

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


def play(
    models: Mapping[int, np.ndarray], encrypted: np.ndarray | None = None, hand_first: bool = True
) -> Callable[[Aggregation], Played]:
    """The lying rounds: (with ``hand_first``) round 0 hands each client the model ``models`` gives it, then a round
    reads every upload apart (and hands each client its own upload back as the aggregate). Where the mode's public
    set cannot encrypt (a compact adapter sized for symmetric encryption), no model can be handed out: the clients
    keep the one they hold, and the result says so."""

    def serve(aggregation: Aggregation) -> Played:
        liar = LyingAggregator(aggregation)
        r, handed, notes = 0, {}, ()
        if hand_first:
            try:
                liar.hand(0, models, encrypted)
                r, handed = 1, dict(models)
            except CiphertextError as err:  # raised before anything was sent
                notes = (f"could not hand out a model: {err.problem}",)
        uploads = liar.train(r)
        liar.hand_back(r, uploads)
        return Played(liar, r, uploads, handed, notes)

    return serve


def configuration(target: Target) -> dict:
    """The target's configuration, as a suite writes it."""
    config = {"mode": target.mode, "adapter": target.adapter, "params": dict(target.params)}
    return {**config, "transport": target.transport}


def clients_of(target: Target) -> Callable:
    """Each client's model side: it holds the honest global model (the victim's), trains as the target says, and
    encrypts as the target's mask says."""
    return lambda ctx: HeldModel(ctx.client_index, target.sizes, target.train, target.encrypted, target.models[0])


def lying(target: Target) -> Callable[[Aggregation], Played]:
    """The rounds the target's aggregator plays: a malicious one first hands each client its model; an honest one
    reads the round the clients train from the global model they hold."""
    return play(dict(enumerate(target.models)), target.encrypted, hand_first=target.strategy is not None)


def victims_mean(reads: list[Read], notes: tuple[str, ...] = ()) -> Seen:
    """The FedAvg of the victims' uploads as read (nothing if any of them was not read)."""
    if not reads or any(r.values is None for r in reads):
        return Seen(None, notes=notes)
    mean = np.mean([r.values for r in reads], axis=0).astype(np.float32)  # type: ignore[misc]
    return Seen(mean, reads[0].visible, notes=notes)


def red_team_view(target: Target) -> Seen:
    """raw: the lying aggregator hands each client the target's model and reads every upload in plaintext; colluding
    clients add nothing it lacks. (The observer's view is :func:`hebench.protections.tls.adversary.observer_view`.)"""
    live = run_round(configuration(target), target.clients, lying(target), clients_of(target))
    if live.served is None:
        return Seen(None, detected=live.server_error or next(iter(live.refusals.values()), None))
    played = live.served
    return victims_mean([played.liar.read(played.uploads[i]) for i in range(target.victims)], played.notes)
