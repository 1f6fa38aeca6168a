"""An offload host: trains, streams its plaintext update to its engine, never holds a key."""

from __future__ import annotations

from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import numpy as np

from hebench.errors import PartyError
from hebench.fl.local_model import LocalModel
from hebench.fl.meter import PhaseMeter
from hebench.fl.party import PartyContext
from hebench.net.certs import TLSFiles
from hebench.net.stream import dial
from hebench.net.transport import Channel, Message
from hebench.selective.split import PLAIN, join, split


def engine_tls(tls_dir: str | None, index: int) -> TLSFiles | None:
    if not tls_dir:
        return None
    folder = Path(tls_dir)
    return TLSFiles(folder / f"host-{index}.pem", folder / f"host-{index}-key.pem", folder / "ca.pem")


class OffloadHost:
    def __init__(self, ctx: PartyContext, engine: Channel, records: Any) -> None:
        self.ctx, self.engine, self.records = ctx, engine, records
        self.index, self.meter = ctx.client_index, PhaseMeter()
        self.local = LocalModel(ctx, records)
        self.mask = self.local.initial_mask()

    def stream(self, r: int, encrypted: np.ndarray, plain: np.ndarray | None, samples: int) -> None:
        """Plaintext to the engine: chunks to encrypt, then (selective) the part to pass through."""
        chunk = self.ctx.suite.offload.chunk_values
        for start in range(0, len(encrypted), chunk):
            self.engine.send(
                Message("update_chunk", {"round": r}, (encrypted[start : start + chunk].astype("<f4").tobytes(),))
            )
        if plain is not None:
            self.engine.send(Message("plain_part", {"round": r}, (PLAIN.serialize(PLAIN.encrypt(plain)),)))
        self.engine.send(Message("update_end", {"round": r, "samples": samples}))

    @staticmethod
    def values(msg: Message) -> tuple[np.ndarray, np.ndarray]:
        encrypted = np.frombuffer(msg.parts[0], dtype="<f4")
        plain = [PLAIN.decrypt(PLAIN.deserialize(b)) for b in msg.parts[1:]]
        return encrypted, (np.concatenate(plain) if plain else np.empty(0))

    def agree_mask(self) -> None:
        before = (self.engine.bytes_sent, self.engine.bytes_received)
        with self.meter.phase("map"):
            local = self.local.score_map()
        with self.meter.phase("send"):
            self.stream(-1, local, None, 1)
        reply = self.engine.recv("map_result")
        self.mask = self.local.agree(self.values(reply)[0])
        self.engine.send(Message("ack", {"round": -1}))
        self.records.put(
            {
                "kind": "mask_agreement",
                "role": "client",
                "client": self.index,
                "engine": reply.meta["engine"],
                "encrypted_fraction": float(self.mask.mean()),
                "mask_sha256": self.local.mask_digest(self.mask),
                "bytes_sent": self.engine.bytes_sent - before[0],
                "bytes_received": self.engine.bytes_received - before[1],
                **self.meter.take(),
            }
        )

    def round(self, msg: Message) -> None:
        r = int(msg.meta["round"])
        before = (self.engine.bytes_sent, self.engine.bytes_received)
        report: dict[str, Any] = {"epoch": int(msg.meta["epoch"])}
        if msg.kind == "train":
            with self.meter.phase("train"):
                vector, report["train_loss"] = self.local.train(r)
            encrypted, plain = split(vector, self.mask)
            with self.meter.phase("send"):
                self.stream(r, encrypted, plain if self.mask is not None else None, self.local.samples)
            with self.meter.phase("wait"):
                msg = self.engine.recv("result")
        if msg.kind != "result":
            raise PartyError(f"expected 'train' or 'result' from the engine, got '{msg.kind}'", "protocol mismatch")
        with self.meter.phase("receive"):
            vector = join(*self.values(msg), self.mask)
        report["engine"] = msg.meta["engine"]
        self.local.finish_round(self.engine, r, vector, msg.meta["weights"], self.meter, before, report)


def run_host(ctx: PartyContext, control: Connection, records: Any) -> None:
    index = ctx.client_index
    _, agg_address, (engine_address, tls_dir) = control.recv()
    tls = engine_tls(tls_dir, index)
    framed = dial(tuple(engine_address), tls=tls, authkey=None if tls else ctx.authkey, peer=f"engine {index}")
    engine = Channel(framed, f"engine {index}", ctx.timeout_s, ctx.transcript(f"client-{index}"))  # type: ignore[arg-type]
    host = OffloadHost(ctx, engine, records)
    hello = {
        "role": "host",
        "client": index,
        "samples": host.local.samples,
        "aggregator": list(agg_address),
        "authkey": ctx.authkey.hex(),
        "chunk_values": ctx.suite.offload.chunk_values,
        "run": ctx.run_id,
    }
    engine.send(Message("hello", hello))
    records.put({"kind": "party_setup", "role": "client", "client": index, **host.meter.take()})
    while (msg := engine.recv()).kind != "done":
        if msg.kind == "map":
            host.agree_mask()
        else:
            host.round(msg)
    engine.close()
