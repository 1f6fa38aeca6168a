"""The aggregator: sums weighted ciphertexts with the public keys only. It is the attacker."""

from __future__ import annotations

import time
from multiprocessing.connection import Connection
from typing import Any

import numpy as np

from hebench.crypto import load_adapter
from hebench.errors import PartyError
from hebench.fl.fedavg import fedavg_weights, weighted_sum
from hebench.fl.keyring import epoch_of
from hebench.fl.meter import PhaseMeter
from hebench.fl.party import PartyContext
from hebench.fl.transport import Channel, Message, accept, connect, listen


def selected_clients(seed: int, round_index: int, clients: int, per_round: int | None) -> list[int]:
    if per_round is None or per_round >= clients:
        return list(range(clients))
    return sorted(np.random.default_rng([seed, round_index]).choice(clients, per_round, replace=False).tolist())


def receive_update(channel: Channel) -> tuple[dict[str, Any], tuple[bytes, ...]]:
    """One client's update: a single message (host-he) or a stream of chunks (offload engines)."""
    msg = channel.recv()
    if msg.kind == "update":
        return msg.meta, msg.parts
    parts: list[bytes] = []
    while msg.kind == "update_chunk":
        parts.extend(msg.parts)
        msg = channel.recv()
    if msg.kind != "update_end":
        raise PartyError(
            f"expected an update from {channel.peer}, got '{msg.kind}'", "protocol mismatch: same hebench?"
        )
    return msg.meta, tuple(parts)


def run_aggregator(ctx: PartyContext, control: Connection, records: Any) -> None:
    meter = PhaseMeter()
    listener = listen(ctx.authkey)
    control.send(listener.address)
    ka_address = control.recv()
    ka = connect(ka_address, ctx.authkey, "key authority", ctx.timeout_s, ctx.transcript("aggregator-keys"))
    ka.send(Message("hello", {"role": "aggregator"}))
    n = ctx.suite.data.clients
    channels = {}
    for _ in range(n):
        ch = accept(listener, "a client", ctx.timeout_s, None)
        hello = ch.recv("hello")
        index = int(hello.meta["client"])
        ch.peer = f"client {index}" + (" (via its engine)" if ctx.config.mode == "offload" else "")
        ch.record_to(ctx.transcript(f"aggregator-from-client-{index}"))
        channels[index] = ch
    listener.close()
    records.put({"kind": "party_setup", "role": "aggregator", **meter.take()})

    epoch, adapter = None, None
    for r in range(ctx.start_round, ctx.suite.training.rounds):
        started = time.perf_counter()
        before = {i: (c.bytes_sent, c.bytes_received) for i, c in channels.items()}
        wanted = epoch_of(r, ctx.suite.training.key_rotation_rounds)
        if wanted != epoch:
            with meter.phase("keys"):
                ka.send(Message("epoch", {"epoch": wanted}))
                adapter = load_adapter(ka.recv("keys").parts[0])
            epoch = wanted
            if adapter.has_secret_key and ctx.config.mode != "raw":
                raise PartyError(
                    "the aggregator was handed a secret key", "the key authority must send public keys only"
                )
        assert adapter is not None
        chosen = selected_clients(ctx.suite.seed, r, n, ctx.suite.training.clients_per_round)
        for i in chosen:
            channels[i].send(Message("train", {"round": r, "epoch": epoch}))
        updates = {}
        with meter.phase("receive"):
            for i in chosen:
                updates[i] = receive_update(channels[i])
        weights = fedavg_weights({i: int(updates[i][0]["samples"]) for i in chosen})
        with meter.phase("deserialize"):
            encs = {i: [adapter.deserialize(p) for p in updates[i][1]] for i in chosen}
        with meter.phase("aggregate"):
            aggregate = weighted_sum(adapter, encs, weights)
        with meter.phase("serialize"):
            blobs = tuple(adapter.serialize(e) for e in aggregate)
        wire_weights = {str(i): w for i, w in weights.items()}
        with meter.phase("send"):
            for ch in channels.values():
                ch.send(Message("aggregate", {"round": r, "epoch": epoch, "weights": wire_weights}, blobs))
        with meter.phase("wait"):
            for ch in channels.values():
                ch.recv("ack")
        records.put(
            {
                "kind": "party_round",
                "role": "aggregator",
                "round": r,
                "epoch": epoch,
                "selected": chosen,
                "weights": wire_weights,
                "bytes_received": sum(c.bytes_received - before[i][1] for i, c in channels.items()),
                "bytes_sent": sum(c.bytes_sent - before[i][0] for i, c in channels.items()),
                "update_bytes": {str(i): sum(len(p) for p in updates[i][1]) for i in chosen},
                "aggregate_bytes": sum(len(b) for b in blobs),
                "round_wall_s": time.perf_counter() - started,
                **meter.take(),
            }
        )
    for ch in channels.values():
        ch.send(Message("done"))
        ch.close()
    ka.send(Message("done"))
    ka.close()
