"""The aggregator's half of a SecAgg+ round: relay keys and shares, collect masked vectors, unmask the sum.

It learns the sum of the survivors' quantised updates and nothing else: each upload carries its
self mask (removed only for survivors, from their seeds' shares) and its pairwise masks (which
cancel between survivors; a dropped client's are rebuilt from its mask key's shares). A client
that stops after sharing its keys is left out of the sum; the round goes on without it.

A client whose connection closes (its process died) is a dropout at whatever stage it is lost: before its
keys, it is no member; after its keys but before its shares, no neighbour holds its shares or masks with it
(a client masks with the neighbours whose shares it received), so it is out of the graph the unmasking uses;
before its masked upload, its pairwise masks are rebuilt as for any dropout; in the middle of it, the sum is
spoiled and the round skipped; during unmask, its input counts and its reveal is missing (the others' shares
must reach the threshold).

A round goes on only with ``params.min_members`` members at every stage (t; in the active model also more than
half of the clients it was drawn for): with fewer it is skipped, so no sum ever covers fewer. In the active model
(``params.model``) it sends every member the signed member list in place of neighbour lists (each client derives
its neighbours and weight), and runs the consistency round before the unmask: the survivors sign the survivor set,
and it hands the signatures to every signer with the unmask request.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, field

import numpy as np
from flwr.common.secure_aggregation.crypto.shamir import combine_shares
from flwr.common.secure_aggregation.crypto.symmetric_encryption import generate_shared_key

from hebench.crypto.base import HEAdapter
from hebench.errors import PartyError, PeerClosedError
from hebench.fl.aggregator import Aggregator, Collected
from hebench.fl.chunks import DEFAULT_CHUNK_VALUES
from hebench.fl.meter import PhaseMeter
from hebench.fl.ring_stream import RingTotal, StreamedAggregate, receive_streams, spans
from hebench.net.messages import MessageKind
from hebench.net.transport import Channel, Message
from hebench.protections.secagg.common import (
    add_mod,
    check_headroom,
    dequantize_sum,
    load_private,
    load_public,
    ring_neighbours,
    sub_mod,
    wire_dtype,
)
from hebench.protections.secagg.mask_prg import mask_stream
from hebench.protections.secagg.members import MemberList
from hebench.protections.secagg.params import SecAggParams
from hebench.protections.secagg.stages import Key, Stage
from hebench.protections.selective.split import PLAIN


@dataclass(frozen=True)
class SecAggResult:
    """The unmasked FedAvg of the survivors, and what each sent."""

    total: RingTotal  # the survivors' quantised weighted updates summed, every mask removed
    summands: int  # the survivors whose updates the sum holds
    weight_sum: float  # the survivors' FedAvg weights (over every member) added up
    params: SecAggParams
    survivors: tuple[int, ...]
    dropped: tuple[int, ...]
    weights: dict[int, float]  # FedAvg weights over the survivors
    update_bytes: dict[int, int]  # bytes of each survivor's masked upload
    left: dict[int, str] = field(default_factory=dict)  # clients that said they left (hebench.faults): phase

    def average_of(self, start: int, stop: int) -> np.ndarray:
        """The unmasked FedAvg of coordinates [start, stop) (float64): the sum dequantised, over the weights."""
        assert self.total.values is not None
        summed = dequantize_sum(self.total.values[start:stop], self.summands, self.params)
        return summed / self.weight_sum

    @property
    def average(self) -> np.ndarray:
        """The whole unmasked FedAvg (float64: sum of the survivors' weighted updates / their weights' sum)."""
        return self.average_of(0, len(self.total)) if len(self.total) else np.empty(0, np.float64)


class SecAggServer:
    """The aggregator's half of one SecAgg+ round: one method per stage, as Flower's ``SecAggPlusWorkflow``.

    :meth:`run` drives the stages over ``channels`` (each client has been told to train; the round was drawn for
    ``population`` clients, default: those channels); each stage reads what the earlier ones left on the instance.
    The masked uploads stream in chunk by chunk into one running sum; the masks are removed from it chunk by chunk
    (``chunk_values`` values at a time), each expanded from its PRG at the chunk's offset. A client whose connection
    closes is a dropout of the stage it was lost in (``on_lost`` is told, once per client).
    """

    def __init__(
        self,
        channels: dict[int, Channel],
        params: SecAggParams,
        meter: PhaseMeter,
        chunk_values: int = DEFAULT_CHUNK_VALUES,
        on_lost: Callable[[int], None] | None = None,
        population: int | None = None,
    ) -> None:
        self.channels, self.params, self.meter = channels, params, meter
        self.chunk_values, self.on_lost = chunk_values, on_lost
        self.active = params.model == "active"
        self.population = population if population is not None else len(channels)
        self.minimum = params.min_members(self.population)  # members every stage must keep
        self.left: dict[int, str] = {}  # clients that said they left (hebench.faults): their phase
        self.lost: set[int] = set()  # clients whose connection closed
        # advertise keys
        self.keys: dict[int, Message] = {}  # each member's sa_keys (its two public keys)
        self.weights: dict[int, float] = {}  # FedAvg weights over the members
        self.graph: dict[int, list[int]] = {}  # the neighbours each member was told
        # share keys
        self.sharers: list[int] = []  # members whose sealed shares came (the others: nobody masks with them)
        self.pairs: dict[int, list[int]] = {}  # the pairwise masks in each sharer's upload
        # collect masked
        self.total = RingTotal(params.modulus)  # the masked uploads' running sum
        self.survivors: list[int] = []
        self.dropped: list[int] = []  # sharers without a masked upload: their pairwise masks are rebuilt
        self.update_bytes: dict[int, int] = {}
        self.gone: dict[int, str] = {}  # every member not in the sum, with its phase
        self.spoiled_by: int | None = None  # a client lost in the middle of its masked upload
        # consistency (active model)
        self.signatures: dict[int, bytes] = {}  # each signer's signature on the survivor set

    def run(self) -> SecAggResult:
        self.advertise_keys()
        self.share_keys()
        self.collect_masked()
        if self.active:
            self.consistency()
        self.unmask()
        return self.result()

    def advertise_keys(self) -> None:
        """Stage 1: each client's two public keys and sample count; the members, their weights and their ring of
        neighbours, each told its neighbours' public keys."""
        with self.meter.phase(Stage.ADVERTISE_KEYS):
            for i in self.channels:
                msg = self._recv(i)
                if msg is None:  # lost before advertising: not a member of this round
                    continue
                if msg.kind == MessageKind.LEAVE:  # left before the protocol began: not a member of this round
                    self.left[i] = str(msg.meta.get("phase", "unknown"))
                elif msg.kind != MessageKind.SA_KEYS:
                    raise PartyError(
                        f"expected 'sa_keys' from {self.channels[i].peer}, got '{msg.kind}'", "protocol mismatch"
                    )
                else:
                    self.keys[i] = msg
        self._keep_minimum(self.keys, "advertising its keys")
        members = sorted(self.keys)
        check_headroom(len(members), self.params)
        with self.meter.phase(Stage.ADVERTISE_KEYS):
            if self.active:  # every member gets the signed list and derives its neighbours and weight from it
                listed = MemberList.from_keys(self.keys)
                self.weights, self.graph = listed.weights(), listed.ring(self.params)
                told = listed.message()
                for i in members:
                    self._send(i, told)
                return
            samples = {i: int(self.keys[i].meta[Key.SAMPLES]) for i in members}
            total = sum(samples.values())
            self.weights = {i: samples[i] / total for i in members}
            self.graph = ring_neighbours(members, self.params)  # as told: each one's share threshold follows from it
            for i in members:
                parts = tuple(p for j in self.graph[i] for p in self.keys[j].parts)
                meta = {Key.WEIGHT: self.weights[i], Key.NEIGHBOURS: self.graph[i]}
                self._send(i, Message(MessageKind.SA_NEIGHBOURS, meta, parts))

    def _keep_minimum(self, members: Collection[int], before: str) -> None:
        """Skip the round (Unrecoverable) when fewer than ``params.min_members`` are left."""
        if len(members) < self.minimum:
            gone = {**{i: "lost" for i in self.lost}, **self.left}
            raise _failed(
                f"secagg: {len(members)} clients are left after the others left before {before}, fewer than the "
                f"{self.minimum} a round must keep",
                gone,
            )

    def share_keys(self) -> None:
        """Stage 2: each member's sealed shares, checked to go to its neighbours only and relayed to them."""
        with self.meter.phase(Stage.SHARE_KEYS):
            sealed: dict[int, Message] = {}
            for i in sorted(self.keys):
                msg = self._recv(i) if i not in self.lost else None
                if msg is not None and msg.kind != MessageKind.SA_SHARES:
                    raise PartyError(
                        f"expected 'sa_shares' from {self.channels[i].peer}, got '{msg.kind}'", "protocol mismatch"
                    )
                if msg is not None:
                    sealed[i] = msg
            inbox: dict[int, list[tuple[int, bytes]]] = {i: [] for i in self.keys}
            for i, msg in sealed.items():
                for j, blob in zip(msg.meta[Key.TO], msg.parts, strict=True):
                    if int(j) not in self.graph[i]:
                        raise PartyError(f"secagg: client {i} addressed a share to non-neighbour {j}", "protocol bug")
                    inbox[int(j)].append((i, blob))
            for j in sealed:  # a client masks with the neighbours whose shares it gets: those that sent theirs
                senders = [i for i, _ in inbox[j]]
                self._send(j, Message(MessageKind.SA_INBOX, {Key.FROM: senders}, tuple(b for _, b in inbox[j])))
        self.sharers = sorted(sealed)  # lost before sharing: nobody holds its shares or masks with it
        self.pairs = {i: [j for j in self.graph[i] if j in sealed] for i in self.sharers}
        self._keep_minimum(self.sharers, "sharing its keys")

    def collect_masked(self) -> None:
        """Stage 3: the sharers' masked uploads, streamed into one running sum; who survived, who dropped."""
        width = wire_dtype(self.params.modulus)
        got = receive_streams(  # a client gone after sharing its keys: SecAgg's point is to go on without it
            {i: self.channels[i] for i in self.sharers if i not in self.lost},
            MessageKind.SA_MASKED_CHUNK,
            MessageKind.SA_MASKED,
            self.total,
            lambda blob: np.frombuffer(blob, dtype=width),
            self.meter,
            tolerate_loss=True,
            phases=(Stage.COLLECT_MASKED, Stage.COLLECT_MASKED),
        )
        for i, phase in got.left.items():
            if phase == "lost":
                self._lose(i)
            else:
                self.left[i] = phase
        masked = {i: int(msg.meta.get(Key.VALUES, len(self.total))) for i, msg in got.ends.items()}
        if any(n != len(self.total) for n in masked.values()):
            raise PartyError(
                "secagg: the clients' masked uploads differ in length", "every client must run the same model"
            )
        self.update_bytes = {i: got.sizes[i] for i in got.ends}
        self.survivors = sorted(masked)
        self.dropped = sorted(set(self.sharers) - set(masked))
        self.gone = {**{i: "lost" for i in self.lost}, **self.left}
        self.spoiled_by = got.spoiled_by
        if len(self.survivors) < self.minimum:
            raise _failed(
                f"secagg: {len(self.survivors)} masked uploads arrived, fewer than the {self.minimum} a round must "
                "keep",
                {**{i: "lost" for i in self.dropped}, **self.gone},
            )

    def consistency(self) -> None:
        """Active model: each survivor is told the survivor set and signs it; the signatures are kept for the
        unmask request (a client reveals nothing without more than half the round's)."""
        with self.meter.phase(Stage.CONSISTENCY):
            told = Message(MessageKind.SA_SURVIVORS, {Key.SURVIVORS: self.survivors})
            asked = [i for i in self.survivors if self._send(i, told)]
            for i in asked:
                msg = self._recv(i)
                if msg is None:  # lost after its masked upload: its input counts, it signs nothing
                    continue
                if msg.kind == MessageKind.LEAVE:  # left after its masked upload
                    self.left[i] = str(msg.meta.get("phase", "unknown"))
                    continue
                if msg.kind != MessageKind.SA_SIGNED or len(msg.parts) != 1:
                    raise PartyError(
                        f"expected 'sa_signed' from {self.channels[i].peer}, got '{msg.kind}'", "protocol mismatch"
                    )
                self.signatures[i] = msg.parts[0]
        quorum = self.params.quorum(self.population)
        if len(self.signatures) < quorum:
            err = Unrecoverable(
                f"secagg: {len(self.signatures)} survivors signed the survivor set, fewer than the {quorum} (more "
                "than half of the round) a client needs before it reveals a share",
                "the round is skipped; keep more clients alive through the consistency round",
            )
            err.left = {**{i: "lost" for i in self.dropped}, **self.gone, **self.left}
            raise err

    def unmask(self) -> None:
        """Stage 4: the survivors reveal the shares of the survivors' seeds and of the dropped clients' mask keys;
        every mask is removed from the sum."""
        with self.meter.phase(Stage.UNMASK):
            reveal = {}
            if self.active:  # each signer gets every signature, and decides itself what to reveal
                told = sorted(self.signatures)
                request = Message(
                    MessageKind.SA_UNMASK,
                    {Key.SURVIVORS: self.survivors, Key.SIGNERS: told},
                    tuple(self.signatures[i] for i in told),
                )
            else:
                told = self.survivors
                request = Message(MessageKind.SA_UNMASK, {Key.SURVIVORS: self.survivors, Key.DROPPED: self.dropped})
            asked = [i for i in told if self._send(i, request)]
            for i in asked:
                msg = self._recv(i)
                if msg is None:  # lost after its masked upload: its input counts, its shares do not come
                    continue
                if msg.kind == MessageKind.LEAVE:  # left after its masked upload: its input counts, not its shares
                    self.left[i] = str(msg.meta.get("phase", "unknown"))
                    continue
                if msg.kind != MessageKind.SA_REVEAL:
                    raise PartyError(
                        f"expected 'sa_reveal' from {self.channels[i].peer}, got '{msg.kind}'", "protocol mismatch"
                    )
                reveal[i] = msg
            try:
                if self.spoiled_by is not None:
                    raise Unrecoverable(
                        f"secagg: client {self.spoiled_by} was lost in the middle of its masked upload: its chunks "
                        "are in the running sum and cannot be taken out",
                        "the round is skipped; keep clients alive through their upload",
                    )
                _unmask(
                    self.total,
                    self.survivors,
                    reveal,
                    self.keys,
                    self.graph,
                    self.pairs,
                    self.dropped,
                    self.params,
                    self.chunk_values,
                )
            except Unrecoverable as err:
                err.left = {**{i: "lost" for i in self.dropped}, **self.gone, **self.left}
                raise

    def result(self) -> SecAggResult:
        survivor_weight = sum(self.weights[i] for i in self.survivors)
        return SecAggResult(
            total=self.total,
            summands=len(self.survivors),
            weight_sum=survivor_weight,
            survivors=tuple(self.survivors),
            dropped=tuple(self.dropped),
            params=self.params,
            weights={i: self.weights[i] / survivor_weight for i in self.survivors},
            update_bytes=self.update_bytes,
            left={**self.gone, **self.left},
        )

    def _lose(self, i: int) -> None:
        if i not in self.lost:
            self.lost.add(i)
            if self.on_lost is not None:
                self.on_lost(i)

    def _send(self, i: int, msg: Message) -> bool:
        try:
            self.channels[i].send(msg)
        except PeerClosedError:
            self._lose(i)
            return False
        return True

    def _recv(self, i: int) -> Message | None:
        try:
            return self.channels[i].recv()
        except PeerClosedError:
            self._lose(i)
            return None


def collect_secagg(
    channels: dict[int, Channel],
    params: SecAggParams,
    meter: PhaseMeter,
    chunk_values: int = DEFAULT_CHUNK_VALUES,
    on_lost: Callable[[int], None] | None = None,
    population: int | None = None,
) -> SecAggResult:
    """Run the stages with the clients on ``channels`` (see :class:`SecAggServer`)."""
    return SecAggServer(channels, params, meter, chunk_values, on_lost, population).run()


def _failed(problem: str, left: dict[int, str]) -> Unrecoverable:
    """A round with nobody left to sum: skipped (recorded with who left), the run goes on."""
    err = Unrecoverable(problem, "the round is skipped; lower faults.dropout or keep the clients alive")
    err.left = left
    return err


def _unmask(
    total: RingTotal,
    survivors: list[int],
    reveal: dict[int, Message],
    keys: dict[int, Message],
    graph: dict[int, list[int]],
    pairs: dict[int, list[int]],
    dropped: list[int],
    params: SecAggParams,
    chunk_values: int,
) -> None:
    """Every mask removed from the survivors' sum in place, chunk by chunk: each survivor's self mask (from its
    seed's shares), and each dropped client's pairwise masks still in its neighbours' uploads (from its key's).

    ``graph``: the neighbours each client was told (its shares' threshold follows from their number); ``pairs``:
    those it exchanged shares with, hence masks (a neighbour lost before sharing holds none and masks with none).
    """
    m, prg = params.modulus, params.prg
    seed_shares: dict[int, list[bytes]] = {i: [] for i in survivors}
    key_shares: dict[int, list[bytes]] = {j: [] for j in dropped}
    for sender, msg in reveal.items():
        seeds_of, keys_of = [int(j) for j in msg.meta[Key.SEEDS_OF]], [int(j) for j in msg.meta[Key.KEYS_OF]]
        if not set(seeds_of) <= seed_shares.keys() or not set(keys_of) <= key_shares.keys():
            raise PartyError(f"secagg: client {sender} revealed shares nobody asked for", "protocol mismatch")
        for owner, share in zip(seeds_of, msg.parts[: len(seeds_of)], strict=True):
            seed_shares[owner].append(share)
        for owner, share in zip(keys_of, msg.parts[len(seeds_of) :], strict=True):
            key_shares[owner].append(share)
    need = {i: min(params.reconstruction_threshold, len(graph[i]) + 1) for i in graph}
    subtract = [mask_stream(prg, _rebuild(seed_shares[i], i, need[i]), m) for i in survivors]
    add = []
    for j in dropped:  # k's upload holds +pair(j, k) when k < j, -pair otherwise
        secret = load_private(_rebuild(key_shares[j], j, need[j]))
        for k in pairs[j]:
            if k in survivors:
                stream = mask_stream(prg, generate_shared_key(secret, load_public(keys[k].parts[1])), m)
                (subtract if k < j else add).append(stream)
    if total.values is None:
        return
    for start, stop in spans(len(total), chunk_values):
        part = total.values[start:stop]
        for stream in subtract:
            part[:] = sub_mod(part, stream.take(stop - start), m)
        for stream in add:
            part[:] = add_mod(part, stream.take(stop - start), m)


class Unrecoverable(PartyError):
    """Fewer shares of a dropped client's secret came back than the threshold: this round has no sum."""

    left: dict[int, str] = {}  # noqa: RUF012 - set per instance by collect_secagg


def _rebuild(shares: list[bytes], owner: int, threshold: int) -> bytes:
    if len(shares) < threshold:
        raise Unrecoverable(
            f"secagg: only {len(shares)} shares of client {owner}'s secret came back (threshold {threshold})",
            "too many clients dropped out: lower reconstruction_threshold or raise num_shares",
        )
    return combine_shares(shares)


def secagg_round(agg: Aggregator, chosen: list[int], adapter: HEAdapter) -> Collected:
    """The aggregator's half of a secagg round: the unmasked FedAvg of the survivors, streamed out in plaintext
    chunks (``aggregate_chunk``) that the clients read chunk by chunk."""
    params = agg.ctx.config.mode_params
    assert isinstance(params, SecAggParams)
    chunk_values = agg.ctx.suite.runtime.chunk_values
    alive = {i: agg.channels[i] for i in chosen if i in agg.channels}  # a client lost in an earlier round is out
    earlier = {i: "lost" for i in chosen if i not in alive}
    try:
        result = collect_secagg(alive, params, agg.meter, chunk_values, agg.lose, population=len(chosen))
    except Unrecoverable as err:  # too many of a client's share holders left: the round fails, the run goes on
        return Collected((), 0, {}, {}, {}, left={**earlier, **err.left}, failed=err.problem)

    def blob(start: int, stop: int) -> bytes:
        return PLAIN.serialize(PLAIN.encrypt(result.average_of(start, stop).astype(np.float32)))

    streamed = StreamedAggregate(len(result.total), chunk_values, blob)  # sent chunk by chunk, made as it goes
    meta = {Key.SURVIVORS: list(result.survivors), Key.DROPPED: list(result.dropped)}
    # clients not in the aggregate, with their phase (a survivor that left after its upload is recorded by its ack)
    gone = {i: result.left.get(i, "lost") for i in chosen if i not in result.survivors}
    return Collected((), 0, result.weights, result.update_bytes, meta, total=streamed, left=gone)
