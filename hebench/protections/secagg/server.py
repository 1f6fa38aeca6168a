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
"""

from __future__ import annotations

from collections.abc import Callable
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
from hebench.protections.secagg.params import SecAggParams
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


def collect_secagg(
    channels: dict[int, Channel],
    params: SecAggParams,
    meter: PhaseMeter,
    chunk_values: int = DEFAULT_CHUNK_VALUES,
    on_lost: Callable[[int], None] | None = None,
) -> SecAggResult:
    """Run the four stages with the clients on ``channels`` (each has been told to train).

    The masked uploads stream in chunk by chunk into one running sum; the masks are removed from it chunk by chunk
    (``chunk_values`` values at a time), each expanded from its PRG at the chunk's offset. A client whose
    connection closes is a dropout of the stage it was lost in (``on_lost`` is told, once per client)."""
    left: dict[int, str] = {}
    lost: set[int] = set()

    def lose(i: int) -> None:
        if i not in lost:
            lost.add(i)
            if on_lost is not None:
                on_lost(i)

    def send(i: int, msg: Message) -> bool:
        try:
            channels[i].send(msg)
        except PeerClosedError:
            lose(i)
            return False
        return True

    def recv(i: int) -> Message | None:
        try:
            return channels[i].recv()
        except PeerClosedError:
            lose(i)
            return None

    with meter.phase("advertise_keys"):
        keys = {}
        for i in channels:
            msg = recv(i)
            if msg is None:  # lost before advertising: not a member of this round
                continue
            if msg.kind == MessageKind.LEAVE:  # left before the protocol began: not a member of this round
                left[i] = str(msg.meta.get("phase", "unknown"))
            elif msg.kind != MessageKind.SA_KEYS:
                raise PartyError(f"expected 'sa_keys' from {channels[i].peer}, got '{msg.kind}'", "protocol mismatch")
            else:
                keys[i] = msg
    if not keys:
        raise _failed("secagg: every client left before advertising its keys", {**{i: "lost" for i in lost}, **left})
    members = sorted(keys)
    samples = {i: int(keys[i].meta["samples"]) for i in members}
    total = sum(samples.values())
    weights = {i: samples[i] / total for i in members}
    graph = ring_neighbours(members, params)  # as told to the clients: each one's share threshold follows from it
    check_headroom(len(members), params)
    with meter.phase("advertise_keys"):
        for i in members:
            parts = tuple(p for j in graph[i] for p in keys[j].parts)
            meta = {"weight": weights[i], "neighbours": graph[i]}
            send(i, Message(MessageKind.SA_NEIGHBOURS, meta, parts))
    with meter.phase("share_keys"):
        sealed: dict[int, Message] = {}
        for i in members:
            msg = recv(i) if i not in lost else None
            if msg is not None and msg.kind != MessageKind.SA_SHARES:
                raise PartyError(f"expected 'sa_shares' from {channels[i].peer}, got '{msg.kind}'", "protocol mismatch")
            if msg is not None:
                sealed[i] = msg
        inbox: dict[int, list[tuple[int, bytes]]] = {i: [] for i in members}
        for i, msg in sealed.items():
            for j, blob in zip(msg.meta["to"], msg.parts, strict=True):
                if int(j) not in graph[i]:
                    raise PartyError(f"secagg: client {i} addressed a share to non-neighbour {j}", "protocol bug")
                inbox[int(j)].append((i, blob))
        for j in sealed:  # a client masks with the neighbours whose shares it gets: those that sent theirs
            senders = [i for i, _ in inbox[j]]
            send(j, Message(MessageKind.SA_INBOX, {"from": senders}, tuple(b for _, b in inbox[j])))
    sharers = sorted(sealed)  # lost before sharing: nobody holds its shares or masks with it
    pairs = {i: [j for j in graph[i] if j in sealed] for i in sharers}  # the pairwise masks in the uploads
    total = RingTotal(params.modulus)  # the masked uploads' running sum, chunk by chunk as they stream in
    width = wire_dtype(params.modulus)
    got = receive_streams(  # a client gone after sharing its keys: SecAgg's point is to go on without it
        {i: channels[i] for i in sharers if i not in lost},
        MessageKind.SA_MASKED_CHUNK,
        MessageKind.SA_MASKED,
        total,
        lambda blob: np.frombuffer(blob, dtype=width),
        meter,
        tolerate_loss=True,
        phases=("collect_masked", "collect_masked"),
    )
    for i, phase in got.left.items():
        if phase == "lost":
            lose(i)
        else:
            left[i] = phase
    masked = {i: int(msg.meta.get("values", len(total))) for i, msg in got.ends.items()}
    if any(n != len(total) for n in masked.values()):
        raise PartyError("secagg: the clients' masked uploads differ in length", "every client must run the same model")
    update_bytes = {i: got.sizes[i] for i in got.ends}
    survivors = sorted(masked)
    dropped = sorted(set(sharers) - set(masked))
    gone = {**{i: "lost" for i in lost}, **left}  # every member not in the sum, with its phase
    if not survivors:
        raise _failed("secagg: every client dropped out before its masked upload", gone)
    with meter.phase("unmask"):
        reveal = {}
        asked = [
            i
            for i in survivors
            if send(i, Message(MessageKind.SA_UNMASK, {"survivors": survivors, "dropped": dropped}))
        ]
        for i in asked:
            msg = recv(i)
            if msg is None:  # lost after its masked upload: its input counts, its shares do not come
                continue
            if msg.kind == MessageKind.LEAVE:  # left after its masked upload: its input counts, its shares do not come
                left[i] = str(msg.meta.get("phase", "unknown"))
                continue
            if msg.kind != MessageKind.SA_REVEAL:
                raise PartyError(f"expected 'sa_reveal' from {channels[i].peer}, got '{msg.kind}'", "protocol mismatch")
            reveal[i] = msg
        try:
            if got.spoiled_by is not None:
                raise Unrecoverable(
                    f"secagg: client {got.spoiled_by} was lost in the middle of its masked upload: its chunks are "
                    "in the running sum and cannot be taken out",
                    "the round is skipped; keep clients alive through their upload",
                )
            _unmask(total, survivors, reveal, keys, graph, pairs, dropped, params, chunk_values)
        except Unrecoverable as err:
            err.left = {**{i: "lost" for i in dropped}, **gone, **left}
            raise
    survivor_weight = sum(weights[i] for i in survivors)
    return SecAggResult(
        total=total,
        summands=len(survivors),
        weight_sum=survivor_weight,
        survivors=tuple(survivors),
        dropped=tuple(dropped),
        params=params,
        weights={i: weights[i] / survivor_weight for i in survivors},
        update_bytes=update_bytes,
        left={**gone, **left},
    )


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
        seeds_of, keys_of = [int(j) for j in msg.meta["seeds_of"]], [int(j) for j in msg.meta["keys_of"]]
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
        result = collect_secagg(alive, params, agg.meter, chunk_values, agg.lose)
    except Unrecoverable as err:  # too many of a client's share holders left: the round fails, the run goes on
        return Collected((), 0, {}, {}, {}, left={**earlier, **err.left}, failed=err.problem)

    def blob(start: int, stop: int) -> bytes:
        return PLAIN.serialize(PLAIN.encrypt(result.average_of(start, stop).astype(np.float32)))

    streamed = StreamedAggregate(len(result.total), chunk_values, blob)  # sent chunk by chunk, made as it goes
    meta = {"survivors": list(result.survivors), "dropped": list(result.dropped)}
    # clients not in the aggregate, with their phase (a survivor that left after its upload is recorded by its ack)
    gone = {i: result.left.get(i, "lost") for i in chosen if i not in result.survivors}
    return Collected((), 0, result.weights, result.update_bytes, meta, total=streamed, left=gone)
