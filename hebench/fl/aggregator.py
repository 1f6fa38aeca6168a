"""The aggregator: sums weighted ciphertexts with the public keys only. It is the attacker."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

import numpy as np

from hebench.crypto import load_adapter
from hebench.crypto.base import HEAdapter
from hebench.crypto.exact_weights import PreWeight, pre_weights
from hebench.errors import PartyError, PeerClosedError
from hebench.fl.fedavg import fedavg_weights
from hebench.fl.keyring import epoch_of
from hebench.fl.meter import PhaseMeter
from hebench.fl.party import AGGREGATOR_DOOR, PUBLIC_DOOR, PartyContext, client_index
from hebench.fl.peers import admit_parties, proven_client
from hebench.fl.running_sum import RunningSum, SumStream, Update
from hebench.fl.streams import receive_uploads, send_aggregate
from hebench.net.messages import MessageKind
from hebench.net.transport import Channel, Message, connect, listen
from hebench.protections.spec import resolve
from hebench.results.records import MaskAgreementRecord, PartyRoundRecord, PartySetupRecord

SUM_UPLOADS = "hebench.fl.aggregator:sum_uploads"


def selected_clients(seed: int, round_index: int, clients: int, per_round: int | None) -> list[int]:
    if per_round is None or per_round >= clients:
        return list(range(clients))
    return sorted(np.random.default_rng([seed, round_index]).choice(clients, per_round, replace=False).tolist())


def receive_update(channel: Channel) -> Update:
    """One client's whole update: a single message (secret sharing's first share), or a stream gathered whole.

    Modes summed with :func:`sum_uploads` never gather: they add each chunk as it arrives (:mod:`hebench.fl.streams`).
    """
    msg = channel.recv()
    if msg.kind == MessageKind.UPDATE:
        return msg.meta, msg.parts
    cipher: list[bytes] = []
    plain: list[bytes] = []
    while msg.kind in (MessageKind.UPDATE_CHUNK, MessageKind.PLAIN_PART):
        (cipher if msg.kind == MessageKind.UPDATE_CHUNK else plain).extend(msg.parts)
        msg = channel.recv()
    if msg.kind != MessageKind.UPDATE_END:
        raise PartyError(
            f"expected an update from {channel.peer}, got '{msg.kind}'", "protocol mismatch: same hebench?"
        )
    return {**msg.meta, "plain_parts": len(plain)}, tuple(cipher + plain)


def sum_updates(
    adapter: HEAdapter, updates: dict[int, Update], weights: dict[int, float]
) -> tuple[tuple[bytes, ...], int]:
    """Weighted sums of the ciphertext parts (public keys) and of any plaintext parts: (blobs, plaintext count)."""
    total = RunningSum(adapter, weights)
    for i in sorted(updates):  # client order, as the local aggregator adds them: the same sum on every runtime
        total.add(i, updates[i])
    return total.blobs()


@dataclass(frozen=True)
class Collected:
    """What the aggregator's half of a round yields: the aggregate (blobs, or a running sum to stream) and how
    it was weighted."""

    blobs: tuple[bytes, ...]
    plain_parts: int  # trailing plaintext blobs (selective)
    weights: dict[int, float]  # FedAvg weights of the clients in the aggregate
    update_bytes: dict[int, int]  # bytes each client uploaded
    meta: dict[str, Any] = field(default_factory=dict)  # extra fields of the aggregate message
    total: SumStream | None = None  # the aggregate as a running sum, streamed out chunk by chunk (no blobs)
    left: dict[int, str] = field(default_factory=dict)  # chosen clients that left before uploading: their phase
    failed: str | None = None  # the round could not be recovered (why): skipped, the global model unchanged


def survivors_weighted(
    weights: dict[int, float], left: dict[int, str], applied: float
) -> tuple[dict[int, float], dict[str, Any]]:
    """FedAvg over the clients that arrived: their weights renormalised to total 1, and the aggregate message's
    ``weight_total`` (the weights the sum carries, added up: each client divides the decrypted sum by it)."""
    arrived = {i: w for i, w in weights.items() if i not in left}
    if not left:
        return arrived, {}
    total = sum(arrived.values())
    return ({i: w / total for i, w in arrived.items()} if total > 0 else {}), {"weight_total": applied}


def sum_uploads(agg: Aggregator, chosen: list[int], adapter: HEAdapter) -> Collected:
    """raw, host-he, offload: one (ciphertext) upload per client, summed weighted with public keys as it streams in.

    Clients told their pre-weight in the "train" message (:meth:`Aggregator.pre_weights_for`) weighed their
    ciphertexts themselves: those are added with weight 1.
    Clients that left (:mod:`hebench.faults`) are left out of the sum; the survivors' weights are renormalised
    by the clients after decryption (``weight_total`` in the aggregate message).
    """
    weights = fedavg_weights({i: agg.samples[i] for i in chosen})
    multipliers = {i: 1.0 for i in chosen} if agg.pre_weights else None
    total = agg.receive_running_sum(adapter, weights, check_samples=True, cipher_weights=multipliers)
    left = dict(agg.left)
    renormalised, meta = survivors_weighted(weights, left, total.survivor_weight)
    return Collected((), 0, renormalised, dict(total.update_bytes), meta=meta, total=total, left=left)


class Aggregator:
    def __init__(
        self, ctx: PartyContext, ka: Channel, channels: dict[int, Channel], records: Any, samples: dict[int, int]
    ) -> None:
        """``samples``: each client's sample count, stated when it connected (the FedAvg weights, known up front)."""
        self.ctx, self.ka, self.channels, self.records, self.samples = ctx, ka, channels, records, samples
        self.collect: Callable[[Aggregator, list[int], HEAdapter], Collected] = resolve(ctx.config.spec.aggregation)
        self.meter = PhaseMeter()
        self.epoch: int | None = None
        self.adapter: HEAdapter | None = None
        self.pre_weights: dict[int, PreWeight] = {}  # this round's, when clients weigh before encryption
        self.peers: dict[str, Channel] = {}  # the mode's helpers that dialled in, by role
        self.left: dict[int, str] = {}  # this round's clients that left before uploading, with their phase
        self.lost: set[int] = set()  # clients whose connection closed (a process that died): out for the run
        self.tolerates_loss = ctx.suite.faults_tolerated(ctx.config)

    def lose(self, client: int) -> None:
        """``client``'s connection closed: it is a dropout of this round and out of the rest of the run."""
        self.lost.add(client)
        self.left.setdefault(client, "lost")
        self.channels.pop(client, None)

    def _lose_channel(self, channel: Channel) -> None:
        self.lose(next(i for i, ch in list(self.channels.items()) if ch is channel))

    def _send(self, client: int, msg: Message) -> None:
        """``msg`` to ``client``; a closed connection is a lost client where the mode tolerates it."""
        try:
            self.channels[client].send(msg)
        except PeerClosedError:
            if not self.tolerates_loss:
                raise
            self.lose(client)

    def adapter_for(self, round_index: int) -> tuple[int, HEAdapter]:
        """Public keys of the round's epoch, fetched from the key authority when it changes."""
        wanted = epoch_of(round_index, self.ctx.suite.training.key_rotation_rounds)
        if wanted != self.epoch:
            with self.meter.phase("keys"):
                self.ka.send(Message(MessageKind.EPOCH, {"epoch": wanted}))
                fresh = load_adapter(self.ka.recv(MessageKind.KEYS).parts[0])
            if fresh.has_secret_key and self.ctx.config.spec.encrypts:
                raise PartyError(
                    "the aggregator was handed a secret key", "the key authority must send public keys only"
                )
            self.epoch, self.adapter = wanted, fresh
        assert self.adapter is not None and self.epoch is not None
        return self.epoch, self.adapter

    def _open_channels(self) -> dict[int | str, Channel]:
        """The clients' channels and the mode's helpers' (decryptor-he's decryptor): all traffic the round costs."""
        return {**self.channels, **self.peers}

    def _traffic(self) -> dict[int | str, tuple[int, int]]:
        return {i: (c.bytes_sent, c.bytes_received) for i, c in self._open_channels().items()}

    def _traffic_since(self, before: dict[int | str, tuple[int, int]]) -> dict[str, int]:
        now = self._open_channels()
        return {
            "bytes_received": sum(c.bytes_received - before.get(i, (0, 0))[1] for i, c in now.items()),
            "bytes_sent": sum(c.bytes_sent - before.get(i, (0, 0))[0] for i, c in now.items()),
        }

    def agree_mask(self) -> None:
        """FedML-HE mask agreement: sum the clients' encrypted score maps, send the sum back."""
        before = self._traffic()
        epoch, adapter = self.adapter_for(self.ctx.start_round)
        for ch in self.channels.values():
            ch.send(Message(MessageKind.MAP, {"round": -1, "epoch": epoch}))
        weights = fedavg_weights({i: 1 for i in self.channels})
        total = self.receive_running_sum(adapter, weights, check_samples=False)
        meta = {"round": -1, "epoch": epoch, "weights": {}, "plain_parts": 0}
        send_aggregate(list(self.channels.values()), total, MessageKind.MAP_SUM, meta, self.meter)
        for ch in self.channels.values():
            ch.recv(MessageKind.ACK)
        label = self.ctx.config.label
        self.records.put(
            MaskAgreementRecord(config=label, role="aggregator", **self._traffic_since(before), **self.meter.measured())
        )

    def receive_running_sum(
        self,
        adapter: HEAdapter,
        weights: dict[int, float],
        check_samples: bool,
        cipher_weights: dict[int, float] | None = None,
    ) -> RunningSum:
        """Each chosen client's update added to the running sum chunk by chunk as it arrives, then dropped."""
        total = RunningSum(adapter, weights, cipher_weights, self.ctx.suite.runtime.aggregate_memory_mb * 2**20)

        def check(i: int, meta: dict[str, Any]) -> None:
            if check_samples and int(meta["samples"]) != self.samples[i]:
                raise PartyError(
                    f"client {i} trained on {meta['samples']} samples, but stated {self.samples[i]} when it connected",
                    "a client's shard must not change during a run",
                )

        for i in weights:
            if i not in self.channels:  # lost earlier (its process died): out of the sum
                total.drop(i)
                self.left[i] = "lost"
        alive = {i: self.channels[i] for i in weights if i in self.channels}
        on_lost = self.lose if self.tolerates_loss else None
        self.left.update(receive_uploads(alive, total, self.meter, check, on_lost))
        return total

    def pre_weights_for(self, chosen: list[int], adapter: HEAdapter) -> dict[int, PreWeight]:
        """Each chosen client's FedAvg weight to apply before encryption, where the mode's adapter can: then the
        headroom an aggregate needs is the number of clients, whatever their sample counts (exact_weights)."""
        spec = self.ctx.config.spec
        if not (adapter.weighs_before_encryption and spec.encrypts and spec.aggregation == SUM_UPLOADS):
            return {}
        return pre_weights({i: self.samples[i] for i in chosen}, adapter.levels)  # type: ignore[attr-defined]

    def round(self, r: int) -> None:
        started, before = time.perf_counter(), self._traffic()
        epoch, adapter = self.adapter_for(r)
        suite = self.ctx.suite
        chosen = selected_clients(suite.seed, r, suite.data.clients, suite.training.selected_count(suite.data.clients))
        self.pre_weights, self.left = self.pre_weights_for(chosen, adapter), {}
        for i in chosen:
            meta = {"round": r, "epoch": epoch, "selected": chosen}
            if i in self.pre_weights:
                meta["pre"] = self.pre_weights[i].to_json()
            if i in self.channels:
                self._send(i, Message(MessageKind.TRAIN, meta))
        got = self.collect(self, chosen, adapter)
        plain_parts = got.plain_parts
        wire_weights = {str(i): w for i, w in got.weights.items()}
        meta = {**got.meta, "round": r, "epoch": epoch, "weights": wire_weights, "plain_parts": plain_parts}
        arrived = [i for i in chosen if i not in got.left]
        spoiled = got.total is not None and got.total.spoiled_by is not None  # a client lost mid-upload
        skipped = spoiled or got.failed is not None or len(arrived) < (suite.training.min_clients or 1)
        if skipped:  # too few arrived: no aggregate, the global model stays as it was
            aggregate_bytes, wire_weights = 0, {}
            meta = {"round": r, "epoch": epoch, "weights": {}, "plain_parts": 0, "skipped": True}
            with self.meter.phase("send"):
                for i in list(self.channels):
                    self._send(i, Message(MessageKind.AGGREGATE, meta))
        elif got.total is not None:  # streamed, chunk by chunk (plain_parts: the plaintext chunks)
            on_lost = self._lose_channel if self.tolerates_loss else None
            aggregate_bytes, plain_parts = send_aggregate(
                list(self.channels.values()), got.total, MessageKind.AGGREGATE, meta, self.meter, on_lost
            )
        else:
            aggregate_bytes = sum(len(b) for b in got.blobs)
            with self.meter.phase("send"):
                for i in list(self.channels):
                    self._send(i, Message(MessageKind.AGGREGATE, meta, got.blobs))
        left = dict(got.left)
        failed = got.failed
        with self.meter.phase("wait"):
            for i, ch in list(self.channels.items()):
                try:
                    ack = ch.recv(MessageKind.ACK).meta
                    phase = ack.get("left")  # left after its upload arrived (hebench.faults)
                    failed = failed or ack.get("failed")  # the clients found the aggregate unusable (secret sharing)
                except PeerClosedError:
                    if not self.tolerates_loss:
                        raise
                    self.lose(i)
                    phase = "lost_after_upload" if i in arrived else "lost"
                if phase is not None and i in chosen:
                    left.setdefault(i, str(phase))
        for i in chosen:  # lost after its upload arrived, before its ack (in the aggregate's send, secagg's unmask)
            if i in self.lost and i not in left:
                left[i] = "lost_after_upload" if i in arrived else "lost"
        if failed is not None and not skipped:  # the clients kept the global model as it was
            skipped, wire_weights = True, {}
        faults = {}
        if left or skipped or self.ctx.suite.faults_for(self.ctx.config) is not None:
            faults = {"arrived": tuple(arrived), "dropped": {str(i): p for i, p in sorted(left.items())}}
            faults["skipped"] = skipped
            if failed is not None:
                faults["skip_reason"] = failed
        self.records.put(
            PartyRoundRecord(
                config=self.ctx.config.label,
                role="aggregator",
                round=r,
                epoch=epoch,
                selected=tuple(chosen),
                weights=wire_weights,
                **self._traffic_since(before),
                update_bytes={str(i): n for i, n in got.update_bytes.items()},
                aggregate_bytes=aggregate_bytes,
                plain_parts=plain_parts,
                round_wall_s=time.perf_counter() - started,
                **faults,
                **self.meter.measured(),
            )
        )


def run_aggregator(ctx: PartyContext, control: Connection, records: Any) -> None:
    creds = ctx.credentials
    tls = ctx.tls_for("aggregator")
    listener = listen(creds.door(AGGREGATOR_DOOR), tls=tls)  # each client (or helper) by its own key
    control.send(listener.address)
    ka_address = control.recv()
    ka = connect(
        ka_address,
        creds.key(PUBLIC_DOOR),
        "key authority",
        ctx.timeout_s,
        ctx.transcript("aggregator-keys"),
        tls=tls,
        server="key-authority",
        retry_s=ctx.suite.measure.setup_timeout_s,
        party="aggregator",
    )
    ka.send(Message(MessageKind.HELLO, {"role": "aggregator"}))
    spec = ctx.config.spec

    def identify(channel: Channel, hello: Message) -> int | str:
        """A helper (its hello role, from a helper's key) or the client the peer proved to be."""
        role = hello.meta.get("role")
        if role in spec.aggregator_peers:
            if client_index(channel.party) is not None or channel.party is None:
                raise PartyError(f"'{channel.party}' said it is the {role}", "a client speaks for itself only")
            return str(role)
        return proven_client(channel, hello)

    arrived = admit_parties(
        listener, ctx.suite.data.clients + len(spec.aggregator_peers), ctx.timeout_s, "aggregator's door", identify
    )
    channels: dict[int, Channel] = {}
    samples: dict[int, int] = {}
    peers: dict[str, Channel] = {}  # helpers of the mode that dial in (decryptor-he's decryptor)
    for who, arrival in arrived.items():
        ch = arrival.channel
        if isinstance(who, str):
            ch.peer = who
            ch.record_to(ctx.transcript(f"aggregator-from-{who}"))
            peers[who] = ch
            continue
        samples[who] = int(arrival.hello.meta["samples"])
        ch.peer = f"client {who}" + (" (via its engine)" if spec.needs_engines else "")
        ch.record_to(ctx.transcript(f"aggregator-from-client-{who}"))
        channels[who] = ch
    listener.close()
    agg = Aggregator(ctx, ka, channels, records, samples)
    agg.peers = peers
    agg.adapter_for(ctx.start_round)  # the first key generation is set-up, not part of round 0
    records.put(PartySetupRecord(config=ctx.config.label, role="aggregator", **agg.meter.measured()))
    if ctx.config.selective is not None and ctx.config.selective.needs_agreement:
        agg.agree_mask()
    for r in range(ctx.start_round, ctx.suite.training.rounds):
        agg.round(r)
    for ch in agg.channels.values():  # the clients still connected
        ch.send(Message(MessageKind.DONE))
        ch.close()
    ka.send(Message(MessageKind.DONE))
    ka.close()
