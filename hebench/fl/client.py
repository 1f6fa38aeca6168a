"""A host-he (or raw) client: trains, encrypts its update, decrypts the aggregate itself."""

from __future__ import annotations

from multiprocessing.connection import Connection
from typing import Any

import numpy as np

from hebench.crypto.base import HEAdapter
from hebench.errors import PartyError
from hebench.fl.keyring import KeyRing
from hebench.fl.local_model import LocalModel
from hebench.fl.meter import PhaseMeter
from hebench.fl.party import PartyContext
from hebench.fl.update import layer_sizes
from hebench.fl.update import split as split_layers
from hebench.net.transport import Channel, Message, connect
from hebench.selective.split import PLAIN, encode_parts, join, parts_of, split


def decode_aggregate(adapter: HEAdapter, msg: Message) -> tuple[np.ndarray, np.ndarray]:
    """(decrypted ciphertext part, plaintext part) of an aggregate message."""
    cipher, plain = parts_of(msg.parts, int(msg.meta.get("plain_parts", 0)))
    encrypted = [adapter.decrypt(adapter.deserialize(b)) for b in cipher]
    plain_values = [PLAIN.decrypt(PLAIN.deserialize(b)) for b in plain]
    as_vector = lambda parts: np.concatenate(parts) if parts else np.empty(0)  # noqa: E731
    return as_vector(encrypted), as_vector(plain_values)


class HostHEClient:
    def __init__(self, ctx: PartyContext, agg: Channel, keys: KeyRing, records: Any) -> None:
        self.ctx, self.agg, self.keys, self.records = ctx, agg, keys, records
        self.index, self.meter = ctx.client_index, PhaseMeter()
        self.local = LocalModel(ctx, records)
        self.sizes = layer_sizes(self.local.model, ctx.config.packing)
        self.mask = self.local.initial_mask()

    def adapter(self, epoch: int) -> HEAdapter:
        with self.meter.phase("keys"):
            adapter = self.keys.get(epoch)
        if self.ctx.config.mode != "raw" and not adapter.has_secret_key:
            raise PartyError(
                "host-he client received no secret key", "the key authority must send clients the secret set"
            )
        return adapter

    def agree_mask(self, msg: Message) -> None:
        before = (self.agg.bytes_sent, self.agg.bytes_received)
        adapter = self.adapter(int(msg.meta["epoch"]))
        with self.meter.phase("map"):
            local = self.local.score_map()
        with self.meter.phase("encrypt"):
            blob = adapter.serialize(adapter.encrypt(local))
        self.agg.send(Message("update", {"round": -1, "samples": 1, "plain_parts": 0}, (blob,)))
        reply = self.agg.recv("map_sum")
        with self.meter.phase("decrypt"):
            summed, _ = decode_aggregate(adapter, reply)
        self.mask = self.local.agree(summed)
        self.agg.send(Message("ack", {"round": -1}))
        self.records.put(
            {
                "kind": "mask_agreement",
                "role": "client",
                "client": self.index,
                "encrypted_fraction": float(self.mask.mean()),
                "mask_sha256": self.local.mask_digest(self.mask),
                "bytes_sent": self.agg.bytes_sent - before[0],
                "bytes_received": self.agg.bytes_received - before[1],
                **self.meter.take(),
            }
        )

    def round(self, msg: Message) -> None:
        r, epoch = int(msg.meta["round"]), int(msg.meta["epoch"])
        before = (self.agg.bytes_sent, self.agg.bytes_received)
        report: dict[str, Any] = {"epoch": epoch}
        adapter = self.adapter(epoch)
        if msg.kind == "train":
            with self.meter.phase("train"):
                vector, report["train_loss"] = self.local.train(r)
            encrypted, plain = split(vector, self.mask)
            with self.meter.phase("encrypt"):
                encs = [adapter.encrypt(v) for v in split_layers(encrypted, self.sizes)] if len(encrypted) else []
            with self.meter.phase("serialize"):
                blobs = encode_parts(adapter, encs, plain if self.mask is not None else None)
            meta = {"round": r, "samples": self.local.samples, "plain_parts": int(self.mask is not None)}
            with self.meter.phase("send"):
                self.agg.send(Message("update", meta, blobs))
            with self.meter.phase("wait"):
                msg = self.agg.recv("aggregate")
        if msg.kind != "aggregate":
            raise PartyError(
                f"expected 'train' or 'aggregate' from the aggregator, got '{msg.kind}'", "protocol mismatch"
            )
        with self.meter.phase("decrypt"):
            encrypted, plain = decode_aggregate(adapter, msg)
            vector = join(encrypted, plain, self.mask)
        self.local.finish_round(self.agg, r, vector, msg.meta["weights"], self.meter, before, report)


def run_client(ctx: PartyContext, control: Connection, records: Any) -> None:
    index, setup = ctx.client_index, PhaseMeter()
    ka_address, agg_address, _ = control.recv()
    with setup.phase("keys"):
        ka = connect(ka_address, ctx.authkey, "key authority", ctx.timeout_s, ctx.transcript(f"client-{index}-keys"))
        ka.send(Message("hello", {"role": "client", "client": index}))
    agg = connect(agg_address, ctx.authkey, "aggregator", ctx.timeout_s, ctx.transcript(f"client-{index}"))
    client = HostHEClient(ctx, agg, KeyRing(source=ka), records)
    agg.send(Message("hello", {"role": "client", "client": index, "samples": client.local.samples}))
    records.put({"kind": "party_setup", "role": "client", "client": index, **setup.take()})
    while (msg := agg.recv()).kind != "done":
        if msg.kind == "map":
            client.agree_mask(msg)
        else:
            client.round(msg)
    agg.close()
    ka.close()
