"""The aggregator: sums weighted ciphertexts with the public keys only. It is the attacker."""

from __future__ import annotations

from multiprocessing.connection import Connection
from typing import Any

import numpy as np

from hebench.crypto import load_adapter
from hebench.errors import PartyError
from hebench.fl.fedavg import fedavg_weights, weighted_sum
from hebench.fl.meter import PhaseMeter
from hebench.fl.party import PartyContext
from hebench.fl.transport import Message, accept, connect, listen


def selected_clients(seed: int, round_index: int, clients: int, per_round: int | None) -> list[int]:
    if per_round is None or per_round >= clients:
        return list(range(clients))
    return sorted(np.random.default_rng([seed, round_index]).choice(clients, per_round, replace=False).tolist())


def run_aggregator(ctx: PartyContext, control: Connection, records: Any) -> None:
    meter = PhaseMeter()
    listener = listen(ctx.authkey)
    control.send(listener.address)
    ka_address = control.recv()
    with meter.phase("keys"):
        ka = connect(ka_address, ctx.authkey, "key authority", ctx.timeout_s, ctx.transcript("aggregator-keys"))
        ka.send(Message("hello", {"role": "aggregator"}))
        adapter = load_adapter(ka.recv("keys").parts[0])
        ka.close()
    if adapter.has_secret_key and ctx.config.mode != "raw":
        raise PartyError("the aggregator was handed a secret key", "the key authority must send it public keys only")
    n = ctx.suite.data.clients
    channels = {}
    for _ in range(n):
        ch = accept(listener, "a client", ctx.timeout_s, None)
        hello = ch.recv("hello")
        index = int(hello.meta["client"])
        ch.peer = f"client {index}"
        ch.record_to(ctx.transcript(f"aggregator-from-client-{index}"))
        channels[index] = ch
    listener.close()
    records.put({"kind": "party_setup", "role": "aggregator", **meter.take()})

    for r in range(ctx.start_round, ctx.suite.training.rounds):
        before = {i: (c.bytes_sent, c.bytes_received) for i, c in channels.items()}
        chosen = selected_clients(ctx.suite.seed, r, n, ctx.suite.training.clients_per_round)
        for i in chosen:
            channels[i].send(Message("train", {"round": r}))
        updates = {}
        with meter.phase("receive"):
            for i in chosen:
                updates[i] = channels[i].recv("update")
        weights = fedavg_weights({i: int(updates[i].meta["samples"]) for i in chosen})
        with meter.phase("deserialize"):
            encs = {i: [adapter.deserialize(p) for p in updates[i].parts] for i in chosen}
        with meter.phase("aggregate"):
            aggregate = weighted_sum(adapter, encs, weights)
        with meter.phase("serialize"):
            blobs = tuple(adapter.serialize(e) for e in aggregate)
        wire_weights = {str(i): w for i, w in weights.items()}
        with meter.phase("send"):
            for ch in channels.values():
                ch.send(Message("aggregate", {"round": r, "weights": wire_weights}, blobs))
        with meter.phase("wait"):
            for ch in channels.values():
                ch.recv("ack")
        records.put(
            {
                "kind": "party_round",
                "role": "aggregator",
                "round": r,
                "selected": chosen,
                "weights": wire_weights,
                "bytes_received": sum(c.bytes_received - before[i][1] for i, c in channels.items()),
                "bytes_sent": sum(c.bytes_sent - before[i][0] for i, c in channels.items()),
                "update_bytes": {str(i): sum(len(p) for p in updates[i].parts) for i in chosen},
                "aggregate_bytes": sum(len(b) for b in blobs),
                **meter.take(),
            }
        )
    for ch in channels.values():
        ch.send(Message("done"))
        ch.close()
