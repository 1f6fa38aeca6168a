"""The secret-sharing mode's aggregators: each sums the shares it receives and sends its sum to every client.

Aggregator 0 is the round's coordinator (the ordinary aggregator process: it tells clients to
train, collects their first shares and acknowledgements); aggregators 1..K-1 are share holders,
each its own process that knows the round's participants from the suite's seed (as the coordinator
does). No aggregator sees more than its own shares: the clients rebuild the sum (Prio's servers
publish their accumulators; here they publish them to the clients only).
"""

from __future__ import annotations

import time
from multiprocessing.connection import Connection
from typing import Any

import numpy as np

from hebench.crypto.base import HEAdapter
from hebench.errors import PartyError
from hebench.fl.aggregator import Aggregator, Collected, selected_clients
from hebench.fl.fedavg import fedavg_weights
from hebench.fl.meter import PhaseMeter
from hebench.fl.party import PartyContext
from hebench.fl.ring_shares import check_headroom, combine
from hebench.modes.params import SecretSharingParams
from hebench.net.transport import Channel, Message, accept, listen
from hebench.results.records import PartyRoundRecord, PartySetupRecord


def sum_first_shares(agg: Aggregator, chosen: list[int], adapter: HEAdapter) -> Collected:
    """Aggregator 0's half of a round: the sum of the clients' first shares (uniform words to it)."""
    params = agg.ctx.config.mode_params
    assert isinstance(params, SecretSharingParams)
    updates, left = {}, {}
    with agg.meter.phase("receive"):
        for i in chosen:
            msg = agg.channels[i].recv()
            if msg.kind == "leave":  # left before sending a share (hebench.faults): so it told every holder
                left[i] = str(msg.meta.get("phase", "unknown"))
            elif msg.kind == "update":
                updates[i] = (msg.meta, msg.parts)
            else:
                raise PartyError(f"expected a share from {agg.channels[i].peer}, got '{msg.kind}'", "protocol mismatch")
    if not updates:  # nobody arrived: the round is skipped (the holders' sums are empty)
        return Collected((), 0, {}, {}, {}, left=left)
    samples = {i: int(meta["samples"]) for i, (meta, _) in updates.items()}
    check_headroom(sum(samples.values()), params)
    with agg.meter.phase("aggregate"):
        total = combine([np.frombuffer(parts[0], dtype=np.uint64) for _, parts in updates.values()])
    sizes = {i: len(parts[0]) for i, (_, parts) in updates.items()}
    meta = {"samples_total": sum(samples.values())}  # the survivors': the clients' decode is their FedAvg
    return Collected((total.tobytes(),), 0, fedavg_weights(samples), sizes, meta, left=left)


def run_share_holder(ctx: PartyContext, control: Connection, records: Any) -> None:
    """Process entry of aggregator k >= 1 (its index arrives first on ``control``)."""
    index = int(control.recv())
    role = f"aggregator-{index}"
    creds = ctx.credentials
    assert creds.aggregator is not None
    meter = PhaseMeter()
    with meter.phase("connect"):
        door = listen(creds.aggregator, tls=ctx.tls_for(role))  # transport: tls covers the shares too
        control.send(door.address)
        channels: dict[int, Channel] = {}
        for _ in range(ctx.suite.data.clients):
            ch = accept(door, "a client", ctx.timeout_s, None)
            client = int(ch.recv("hello").meta["client"])
            ch.peer = f"client {client}"
            ch.record_to(ctx.transcript(f"{role}-from-client-{client}"))
            channels[client] = ch
        door.close()
    records.put(PartySetupRecord(config=ctx.config.label, role=role, **meter.measured()))
    suite = ctx.suite
    for r in range(ctx.start_round, suite.training.rounds):
        started = time.perf_counter()
        before = {i: (c.bytes_sent, c.bytes_received) for i, c in channels.items()}
        chosen = selected_clients(suite.seed, r, suite.data.clients, suite.training.selected_count(suite.data.clients))
        shares = {}
        with meter.phase("receive"):
            for i in chosen:
                msg = channels[i].recv()
                if msg.kind == "leave":  # the client left before sharing (hebench.faults)
                    continue
                if msg.kind != "share":
                    raise PartyError(f"expected a share from {channels[i].peer}, got '{msg.kind}'", "protocol mismatch")
                shares[i] = msg
        with meter.phase("aggregate"):
            parts = [np.frombuffer(m.parts[0], dtype=np.uint64) for m in shares.values()]
            total = combine(parts).tobytes() if parts else b""
        with meter.phase("send"):
            for ch in channels.values():
                ch.send(Message("share_sum", {"round": r, "aggregator": index}, (total,)))
        records.put(
            PartyRoundRecord(
                config=ctx.config.label,
                role=role,
                round=r,
                selected=tuple(chosen),
                bytes_received=sum(c.bytes_received - before[i][1] for i, c in channels.items()),
                bytes_sent=sum(c.bytes_sent - before[i][0] for i, c in channels.items()),
                update_bytes={str(i): len(m.parts[0]) for i, m in shares.items()},
                aggregate_bytes=len(total),
                round_wall_s=time.perf_counter() - started,
                **meter.measured(),
            )
        )
    for ch in channels.values():
        ch.close()
