"""A client: trains locally, encrypts its update (host-he), decrypts the aggregate."""

from __future__ import annotations

from multiprocessing.connection import Connection
from typing import Any

import numpy as np
import torch

from hebench.crypto import load_adapter
from hebench.errors import PartyError
from hebench.fl.meter import PhaseMeter
from hebench.fl.party import PartyContext, safe_label
from hebench.fl.training import evaluate, train_locally
from hebench.fl.transport import Message, connect
from hebench.fl.update import layer_sizes, load_vector, model_vector, split
from hebench.models import build_model


def initial_model(ctx: PartyContext) -> torch.nn.Module:
    """The same initial model in every client and every configuration (seeded)."""
    torch.manual_seed(ctx.suite.seed)
    return build_model(ctx.suite.model.name, ctx.input_shape, ctx.num_classes, ctx.suite.model.hidden)


def run_client(ctx: PartyContext, control: Connection, records: Any) -> None:
    assert ctx.data is not None
    index, meter = ctx.client_index, PhaseMeter()
    ka_address, agg_address = control.recv()
    with meter.phase("keys"):
        ka = connect(ka_address, ctx.authkey, "key authority", ctx.timeout_s, ctx.transcript(f"client-{index}-keys"))
        ka.send(Message("hello", {"role": "client", "client": index}))
        adapter = load_adapter(ka.recv("keys").parts[0])
        ka.close()
    if ctx.config.mode != "raw" and not adapter.has_secret_key:
        raise PartyError("host-he client received no secret key", "the key authority must send clients the secret set")
    model = initial_model(ctx)
    if ctx.initial is not None:
        load_vector(model, ctx.initial)
    sizes = layer_sizes(model, ctx.config.packing)
    agg = connect(agg_address, ctx.authkey, "aggregator", ctx.timeout_s, ctx.transcript(f"client-{index}"))
    agg.send(Message("hello", {"role": "client", "client": index, "samples": len(ctx.data)}))
    records.put({"kind": "party_setup", "role": "client", "client": index, **meter.take()})
    checkpoints = ctx.run_dir / "checkpoints" / safe_label(ctx.config.label)

    while True:
        msg = agg.recv()
        if msg.kind == "done":
            break
        r = int(msg.meta["round"])
        before = (agg.bytes_sent, agg.bytes_received)
        report: dict[str, Any] = {}
        if msg.kind == "train":
            with meter.phase("train"):
                seed = ctx.suite.seed * 1_000_003 + r * 1009 + index
                report["train_loss"] = train_locally(model, ctx.data.x, ctx.data.y, ctx.suite.training, seed)
                vector = model_vector(model)
            with meter.phase("encrypt"):
                encs = [adapter.encrypt(v) for v in split(vector, sizes)]
            with meter.phase("serialize"):
                blobs = tuple(adapter.serialize(e) for e in encs)
            with meter.phase("send"):
                agg.send(Message("update", {"round": r, "samples": len(ctx.data)}, blobs))
            if ctx.suite.measure.decryption_error:
                records.put({"kind": "oracle_update", "client": index, "round": r, "vector": vector})
            with meter.phase("wait"):
                msg = agg.recv("aggregate")
        if msg.kind != "aggregate":
            raise PartyError(
                f"expected 'train' or 'aggregate' from the aggregator, got '{msg.kind}'", "protocol mismatch"
            )
        with meter.phase("deserialize"):
            encs = [adapter.deserialize(p) for p in msg.parts]
        with meter.phase("decrypt"):
            vector = np.concatenate([adapter.decrypt(e) for e in encs]).astype(np.float32)
            load_vector(model, vector)
        if index == 0:
            assert ctx.test is not None
            with meter.phase("evaluate"):
                ev = evaluate(model, *ctx.test)
            report.update(accuracy=ev.accuracy, loss=ev.loss)
            checkpoints.mkdir(parents=True, exist_ok=True)
            np.save(checkpoints / f"round-{r}.npy", vector)
            if ctx.suite.measure.decryption_error:
                records.put({"kind": "oracle_aggregate", "round": r, "vector": vector, "weights": msg.meta["weights"]})
        agg.send(Message("ack", {"round": r}))
        records.put(
            {
                "kind": "party_round",
                "role": "client",
                "client": index,
                "round": r,
                "bytes_sent": agg.bytes_sent - before[0],
                "bytes_received": agg.bytes_received - before[1],
                **report,
                **meter.take(),
            }
        )
    agg.close()
