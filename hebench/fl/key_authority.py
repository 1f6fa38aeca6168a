"""The key authority: makes a key set per epoch; holders get the secret set, the aggregator the public one.

Key holders are the clients (host-he) or the offload engines (the authority
dials them). The aggregator asks for each epoch's keys as rounds reach it
(rotation every K rounds); the authority pushes the secret set to every
holder before it answers, so no holder ever waits on a round it cannot decrypt.
"""

from __future__ import annotations

from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from hebench.crypto import create_adapter
from hebench.fl.meter import PhaseMeter
from hebench.fl.party import PartyContext
from hebench.net.transport import Channel, Message, accept, listen


def dial_engines(ctx: PartyContext, endpoints: list[tuple[str, int]], tls_dir: str | None) -> list[Channel]:
    from hebench.net.certs import TLSFiles
    from hebench.net.stream import dial

    tls = None
    if tls_dir:
        folder = Path(tls_dir)
        tls = TLSFiles(folder / "key-authority.pem", folder / "key-authority-key.pem", folder / "ca.pem")
    channels = []
    for i, address in enumerate(endpoints):
        framed = dial(tuple(address), tls=tls, authkey=None if tls else ctx.authkey, peer=f"engine {i}")
        ch = Channel(framed, f"engine {i}", ctx.timeout_s)  # type: ignore[arg-type]
        ch.send(Message("hello", {"role": "key_authority"}))
        channels.append(ch)
    return channels


def run_key_authority(ctx: PartyContext, control: Connection, records: Any) -> None:
    listener = listen(ctx.authkey)
    control.send(listener.address)
    engines, tls_dir = control.recv()
    holders = dial_engines(ctx, engines, tls_dir)
    expected = 1 + (ctx.suite.data.clients if ctx.config.mode == "host-he" or ctx.config.mode == "raw" else 0)
    aggregator: Channel | None = None
    for _ in range(expected):
        channel = accept(listener, "a party", ctx.timeout_s)
        hello = channel.recv("hello")
        if hello.meta.get("role") == "aggregator":
            aggregator = channel
        else:
            holders.append(channel)
    listener.close()
    assert aggregator is not None
    while True:
        request = aggregator.recv()
        if request.kind == "done":
            break
        epoch = int(request.meta["epoch"])
        meter = PhaseMeter()
        adapter = create_adapter(ctx.config.adapter, ctx.config.params)
        with meter.phase("keygen"):
            adapter.keygen()
            secret, public = adapter.export_keys(secret=True), adapter.export_keys(secret=False)
        with meter.phase("distribute"):
            for holder in holders:  # clients (host-he) or engines (offload): the secret set
                holder.send(Message("keys", {"epoch": epoch, "secret": True, "run": ctx.run_id}, (secret,)))
            aggregator.send(Message("keys", {"epoch": epoch, "secret": False}, (public,)))  # never the secret
        records.put(
            {
                "kind": "keygen",
                "role": "key_authority",
                "epoch": epoch,
                "key_id": adapter.key_id,
                "info": adapter.info().__dict__,
                "key_bytes": {"secret_set": len(secret), "public_set": len(public)},
                "holders": len(holders),
                **meter.take(),
            }
        )
    for holder in [*holders, aggregator]:
        holder.close()
