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
from hebench.fl.aggregator import Aggregator, Collected, receive_update, selected_clients
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
    with agg.meter.phase("receive"):
        updates = {i: receive_update(agg.channels[i]) for i in chosen}
    samples = {i: int(updates[i][0]["samples"]) for i in chosen}
    check_headroom(sum(samples.values()), params)
    with agg.meter.phase("aggregate"):
        total = combine([np.frombuffer(updates[i][1][0], dtype=np.uint64) for i in chosen])
    sizes = {i: len(updates[i][1][0]) for i in chosen}
    meta = {"samples_total": sum(samples.values())}
    return Collected((total.tobytes(),), 0, fedavg_weights(samples), sizes, meta)


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
        chosen = selected_clients(suite.seed, r, suite.data.clients, suite.training.clients_per_round)
        with meter.phase("receive"):
            shares = {i: channels[i].recv("share") for i in chosen}
        with meter.phase("aggregate"):
            total = combine([np.frombuffer(shares[i].parts[0], dtype=np.uint64) for i in chosen]).tobytes()
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
                update_bytes={str(i): len(shares[i].parts[0]) for i in chosen},
                aggregate_bytes=len(total),
                round_wall_s=time.perf_counter() - started,
                **meter.measured(),
            )
        )
    for ch in channels.values():
        ch.close()
