"""A host-he (or raw) client: trains, encrypts its update, decrypts the aggregate itself."""

from __future__ import annotations

import os
from multiprocessing.connection import Connection
from typing import Any

import numpy as np

from hebench.errors import PartyError
from hebench.fl.keyring import KeyRing
from hebench.fl.local_model import LocalModel
from hebench.fl.meter import PhaseMeter
from hebench.fl.party import PartyContext
from hebench.fl.transport import Message, connect
from hebench.fl.update import layer_sizes, split


def run_client(ctx: PartyContext, control: Connection, records: Any) -> None:
    index, meter = ctx.client_index, PhaseMeter()
    ka_address, agg_address, _ = control.recv()
    with meter.phase("keys"):
        ka = connect(ka_address, ctx.authkey, "key authority", ctx.timeout_s, ctx.transcript(f"client-{index}-keys"))
        ka.send(Message("hello", {"role": "client", "client": index}))
        keys = KeyRing(source=ka)
    local = LocalModel(ctx, records)
    sizes = layer_sizes(local.model, ctx.config.packing)
    agg = connect(agg_address, ctx.authkey, "aggregator", ctx.timeout_s, ctx.transcript(f"client-{index}"))
    agg.send(Message("hello", {"role": "client", "client": index, "samples": local.samples}))
    records.put({"kind": "party_setup", "role": "client", "client": index, **meter.take()})

    while True:
        msg = agg.recv()
        if msg.kind == "done":
            break
        r, epoch = int(msg.meta["round"]), int(msg.meta["epoch"])
        before = (agg.bytes_sent, agg.bytes_received)
        report: dict[str, Any] = {"epoch": epoch}
        with meter.phase("keys"):
            adapter = keys.get(epoch)
        if ctx.config.mode != "raw" and not adapter.has_secret_key:
            raise PartyError(
                "host-he client received no secret key", "the key authority must send clients the secret set"
            )
        if msg.kind == "train":
            with meter.phase("train"):
                vector, report["train_loss"] = local.train(r)
            with meter.phase("encrypt"):
                encs = [adapter.encrypt(v) for v in split(vector, sizes)]
            with meter.phase("serialize"):
                blobs = tuple(adapter.serialize(e) for e in encs)
            with meter.phase("send"):
                agg.send(Message("update", {"round": r, "samples": local.samples}, blobs))
            with meter.phase("wait"):
                msg = agg.recv("aggregate")
        if msg.kind != "aggregate":
            raise PartyError(
                f"expected 'train' or 'aggregate' from the aggregator, got '{msg.kind}'", "protocol mismatch"
            )
        with meter.phase("deserialize"):
            encs = [adapter.deserialize(p) for p in msg.parts]
        with meter.phase("decrypt"):
            vector = np.concatenate([adapter.decrypt(e) for e in encs])
        with meter.phase("evaluate"):
            report.update(local.apply(r, vector, msg.meta["weights"]))
        agg.send(Message("ack", {"round": r}))
        records.put(
            {
                "kind": "party_round",
                "role": "client",
                "client": index,
                "round": r,
                "affinity": sorted(os.sched_getaffinity(0)),
                "bytes_sent": agg.bytes_sent - before[0],
                "bytes_received": agg.bytes_received - before[1],
                **report,
                **meter.take(),
            }
        )
    agg.close()
    ka.close()
