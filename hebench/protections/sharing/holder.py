"""The secret-sharing mode's aggregators: each sums the shares it receives and sends its sum to every client.

Aggregator 0 is the round's coordinator (the ordinary aggregator process: it tells clients to
train, collects their first shares and acknowledgements); aggregators 1..K-1 are share holders,
each its own process that knows the round's participants from the suite's seed (as the coordinator
does). No aggregator sees more than its own shares: the clients rebuild the sum (Prio's servers
publish their accumulators; here they publish them to the clients only). A share holder's door admits
the clients only, each by its own key there (or its certificate): a client is the one its key proves,
never the one its hello names, so aggregator 0 (whose keys open no holder's door) cannot take client
slots at a holder and collect its "sum" of one victim's share (N4 of issue #36).

Shares stream in chunk by chunk and are added into one running sum as they arrive; each sum streams back to
every client in chunks (the coordinator's as ``aggregate_chunk``, a holder's as ``share_sum_chunk``
{round, aggregator, offset, values}, then ``share_sum``): :mod:`hebench.fl.ring_stream`.

Before it sums round r + 1, a holder reads from every client the digest of the coordinator's sum of round r as
that client received it, and refuses the round unless all agree (:func:`check_same_sums`): a coordinator that hands
some clients a sum of its own making (model inconsistency: a dead model for all but a victim, whose next update
a colluding client would then read alone) is caught before any further sum is published.

A client whose connection closes (its process died) is a dropout: each aggregator leaves it out of its sum
and out of the rest of the run. Each sum names the clients whose whole shares it holds (``summed``; a
holder's also ``spoiled_by``: a client lost mid-stream, part of whose share is in it): the clients rebuild
the FedAvg only when every aggregator's sum holds the same clients, and otherwise skip the round and say why
in their acknowledgement (a client killed between its shares to two aggregators reaches one and not the other).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

import numpy as np

from hebench.crypto.base import HEAdapter
from hebench.errors import PartyError, PeerClosedError
from hebench.fl.aggregator import Aggregator, Collected, selected_clients
from hebench.fl.fedavg import fedavg_weights
from hebench.fl.meter import PhaseMeter
from hebench.fl.party import PartyContext
from hebench.fl.peers import admit_parties, proven_client
from hebench.fl.ring_stream import RingTotal, StreamedAggregate, receive_streams, spans
from hebench.net.messages import MessageKind
from hebench.net.transport import Channel, Message, listen
from hebench.protections.sharing.params import SecretSharingParams
from hebench.protections.sharing.ring_shares import check_headroom
from hebench.results.records import PartyRoundRecord, PartySetupRecord


def sum_first_shares(agg: Aggregator, chosen: list[int], adapter: HEAdapter) -> Collected:
    """Aggregator 0's half of a round: the sum of the clients' first shares (uniform words to it)."""
    params = agg.ctx.config.mode_params
    assert isinstance(params, SecretSharingParams)
    total = RingTotal()  # the first shares' running sum (mod 2^64), chunk by chunk
    alive = {i: agg.channels[i] for i in chosen if i in agg.channels}  # a client lost in an earlier round is out
    got = receive_streams(
        alive, MessageKind.SHARE_CHUNK, MessageKind.UPDATE, total, _words, agg.meter, tolerate_loss=agg.tolerates_loss
    )
    for i, phase in got.left.items():
        if phase == "lost":
            agg.lose(i)
    left = {**{i: "lost" for i in chosen if i not in alive}, **got.left}
    if got.spoiled_by is not None:
        why = f"secret-sharing: client {got.spoiled_by} was lost in the middle of its first share"
        return Collected((), 0, {}, {}, {}, left=left, failed=why)
    if not got.ends:  # nobody arrived: the round is skipped (the holders' sums are empty)
        return Collected((), 0, {}, {}, {}, left=left)
    samples = {i: int(msg.meta["samples"]) for i, msg in got.ends.items()}
    check_headroom(sum(samples.values()), params)
    sizes = {i: got.sizes[i] for i in got.ends}
    # samples_total: the survivors' (the clients' decode is their FedAvg); summed: whose shares the sum holds
    meta = {"samples_total": sum(samples.values()), "summed": sorted(got.ends)}
    streamed = StreamedAggregate(len(total), agg.ctx.suite.runtime.chunk_values, _slice_of(total))
    return Collected((), 0, fedavg_weights(samples), sizes, meta, total=streamed, left=left)


def _words(blob: bytes) -> np.ndarray:
    return np.frombuffer(blob, dtype=np.uint64)


def _slice_of(total: RingTotal) -> Callable[[int, int], bytes]:
    def blob(start: int, stop: int) -> bytes:
        assert total.values is not None
        return total.values[start:stop].tobytes()

    return blob


def send_share_sum(
    channels: dict[int, Channel] | list[Channel],
    total: RingTotal,
    head: dict[str, Any],
    chunk_values: int,
    end: dict[str, Any] | None = None,
) -> set[int]:
    """A holder's sum to every client: chunk k to each in turn (``share_sum_chunk``), then ``share_sum`` {**end};
    returns the clients (keys of ``channels``; positions of a list) whose connection closed meanwhile, left out of
    the rest of the stream."""
    channels = channels if isinstance(channels, dict) else dict(enumerate(channels))
    lost: set[int] = set()

    def send_all(msg: Message) -> None:
        for i, ch in channels.items():
            if i in lost:
                continue
            try:
                ch.send(msg)
            except PeerClosedError:
                lost.add(i)

    blob = _slice_of(total)
    for start, stop in spans(len(total), chunk_values):
        send_all(
            Message(MessageKind.SHARE_SUM_CHUNK, {**head, "offset": start, "values": len(total)}, (blob(start, stop),))
        )
    send_all(Message(MessageKind.SHARE_SUM, {**head, **(end or {}), "values": len(total)}))
    return lost


def check_same_sums(channels: dict[int, Channel], r: int, meter: PhaseMeter, tolerate_loss: bool) -> set[int]:
    """Read each client's digest of the coordinator's sum of round ``r``; PartyError unless every client saw the same
    sum. Returns the clients lost meanwhile (with ``tolerate_loss``: a closed connection is a dropout)."""
    seen: dict[str, list[int]] = {}
    lost: set[int] = set()
    for i, channel in channels.items():
        try:
            with meter.phase("receive"):
                msg = channel.recv(MessageKind.SUM_DIGEST)
        except PeerClosedError:
            if not tolerate_loss:
                raise
            lost.add(i)
            continue
        if int(msg.meta.get("round", -2)) != r:
            raise PartyError(
                f"{channel.peer} sent the digest of round {msg.meta.get('round')}, not {r}", "same hebench?"
            )
        seen.setdefault(str(msg.meta.get("digest")), []).append(i)
    if len(seen) > 1:
        groups = "; ".join(f"clients {sorted(clients)}" for clients in sorted(seen.values()))
        raise PartyError(
            f"secret-sharing: the coordinator handed clients different sums in round {r} ({groups} each saw one): "
            "model inconsistency, refused before another round is summed",
            "aggregator 0 deviates from the protocol: stop trusting it",
        )
    return lost


def run_share_holder(ctx: PartyContext, control: Connection, records: Any) -> None:
    """Process entry of aggregator k >= 1 (its index arrives first on ``control``)."""
    index = int(control.recv())
    role = f"aggregator-{index}"
    meter = PhaseMeter()
    with meter.phase("connect"):
        door = listen(ctx.credentials.door(role), tls=ctx.tls_for(role))  # transport: tls covers the shares too
        control.send(door.address)
        arrived = admit_parties(door, ctx.suite.data.clients, ctx.timeout_s, f"{role}'s door", proven_client)
        channels: dict[int, Channel] = {}
        for client, arrival in sorted(arrived.items(), key=lambda item: int(item[0])):
            ch = arrival.channel
            ch.peer = f"client {client}"
            ch.record_to(ctx.transcript(f"{role}-from-client-{client}"))
            channels[int(client)] = ch
        door.close()
    records.put(PartySetupRecord(config=ctx.config.label, role=role, **meter.measured()))
    try:
        _serve_rounds(ctx, index, channels, meter, records)
    finally:  # a refusal (or any failure) hangs up on every client at once
        for ch in channels.values():
            ch.close()


def _serve_rounds(ctx: PartyContext, index: int, channels: dict[int, Channel], meter: PhaseMeter, records: Any) -> None:
    role = f"aggregator-{index}"
    suite = ctx.suite
    tolerant = suite.faults_tolerated(ctx.config)  # a client's closed connection is its dropout
    for r in range(ctx.start_round, suite.training.rounds):
        started = time.perf_counter()
        if r > ctx.start_round:  # every client saw the same coordinator sum last round, or no more sums
            for i in check_same_sums(channels, r - 1, meter, tolerant):
                channels.pop(i).close()
        before = {i: (c.bytes_sent, c.bytes_received) for i, c in channels.items()}
        chosen = selected_clients(suite.seed, r, suite.data.clients, suite.training.selected_count(suite.data.clients))
        total = RingTotal()
        alive = {i: channels[i] for i in chosen if i in channels}  # a client lost in an earlier round is out
        got = receive_streams(
            alive, MessageKind.SHARE_CHUNK, MessageKind.SHARE, total, _words, meter, tolerate_loss=tolerant
        )
        lost = {i for i, phase in got.left.items() if phase == "lost"}
        end = {"summed": sorted(got.ends), "spoiled_by": got.spoiled_by}  # whose whole shares the sum holds
        with meter.phase("send"):
            head = {"round": r, "aggregator": index}
            lost |= send_share_sum(channels, total, head, ctx.suite.runtime.chunk_values, end)
        for i in lost:  # out for the rest of the run
            before.pop(i, None)
            channels.pop(i).close()
        records.put(
            PartyRoundRecord(
                config=ctx.config.label,
                role=role,
                round=r,
                selected=tuple(chosen),
                bytes_received=sum(c.bytes_received - before[i][1] for i, c in channels.items()),
                bytes_sent=sum(c.bytes_sent - before[i][0] for i, c in channels.items()),
                update_bytes={str(i): got.sizes[i] for i in got.ends},
                aggregate_bytes=8 * len(total),
                round_wall_s=time.perf_counter() - started,
                **meter.measured(),
            )
        )
