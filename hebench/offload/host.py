"""An offload host: trains, streams its plaintext update to its engine, never holds a key."""

from __future__ import annotations

import os
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import numpy as np

from hebench.errors import PartyError
from hebench.fl.local_model import LocalModel
from hebench.fl.meter import PhaseMeter
from hebench.fl.party import PartyContext
from hebench.fl.transport import Channel, Message
from hebench.offload.certs import TLSFiles
from hebench.offload.stream import dial


def engine_tls(tls_dir: str | None, index: int) -> TLSFiles | None:
    if not tls_dir:
        return None
    folder = Path(tls_dir)
    return TLSFiles(folder / f"host-{index}.pem", folder / f"host-{index}-key.pem", folder / "ca.pem")


def run_host(ctx: PartyContext, control: Connection, records: Any) -> None:
    index, meter = ctx.client_index, PhaseMeter()
    _, agg_address, (engine_address, tls_dir) = control.recv()
    local = LocalModel(ctx, records)
    tls = engine_tls(tls_dir, index)
    framed = dial(tuple(engine_address), tls=tls, authkey=None if tls else ctx.authkey, peer=f"engine {index}")
    engine = Channel(framed, f"engine {index}", ctx.timeout_s, ctx.transcript(f"client-{index}"))  # type: ignore[arg-type]
    engine.send(
        Message(
            "hello",
            {
                "role": "host",
                "client": index,
                "samples": local.samples,
                "aggregator": list(agg_address),
                "authkey": ctx.authkey.hex(),
                "chunk_values": ctx.suite.offload.chunk_values,
            },
        )
    )
    records.put({"kind": "party_setup", "role": "client", "client": index, **meter.take()})
    chunk = ctx.suite.offload.chunk_values
    while True:
        msg = engine.recv()
        if msg.kind == "done":
            break
        r = int(msg.meta["round"])
        before = (engine.bytes_sent, engine.bytes_received)
        report: dict[str, Any] = {"epoch": int(msg.meta["epoch"])}
        if msg.kind == "train":
            with meter.phase("train"):
                vector, report["train_loss"] = local.train(r)
            with meter.phase("send"):
                for start in range(0, len(vector), chunk):
                    engine.send(
                        Message("update_chunk", {"round": r}, (vector[start : start + chunk].astype("<f4").tobytes(),))
                    )
                engine.send(Message("update_end", {"round": r, "samples": local.samples}))
            with meter.phase("wait"):
                msg = engine.recv("result")
        if msg.kind != "result":
            raise PartyError(f"expected 'train' or 'result' from the engine, got '{msg.kind}'", "protocol mismatch")
        with meter.phase("receive"):
            vector = np.frombuffer(msg.parts[0], dtype="<f4")
        with meter.phase("evaluate"):
            report.update(local.apply(r, vector, msg.meta["weights"]))
        engine.send(Message("ack", {"round": r}))
        records.put(
            {
                "kind": "party_round",
                "role": "client",
                "client": index,
                "round": r,
                "affinity": sorted(os.sched_getaffinity(0)),
                "bytes_sent": engine.bytes_sent - before[0],
                "bytes_received": engine.bytes_received - before[1],
                "engine": msg.meta["engine"],
                **report,
                **meter.take(),
            }
        )
    engine.close()
