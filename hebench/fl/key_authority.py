"""The key authority: generates keys; clients get the secret set, the aggregator only the public one."""

from __future__ import annotations

from multiprocessing.connection import Connection
from typing import Any

from hebench.crypto import create_adapter
from hebench.fl.meter import PhaseMeter
from hebench.fl.party import PartyContext
from hebench.fl.transport import Message, accept, listen


def run_key_authority(ctx: PartyContext, control: Connection, records: Any) -> None:
    meter = PhaseMeter()
    listener = listen(ctx.authkey)
    control.send(listener.address)
    adapter = create_adapter(ctx.config.adapter, ctx.config.params)
    with meter.phase("keygen"):
        adapter.keygen()
        secret, public = adapter.export_keys(secret=True), adapter.export_keys(secret=False)
    sent = 0
    for _ in range(ctx.suite.data.clients + 1):
        channel = accept(listener, "a party", ctx.timeout_s)
        hello = channel.recv("hello")
        is_client = hello.meta.get("role") == "client"
        # host-he: each client holds the secret key; the aggregator never does.
        channel.send(Message("keys", {"secret": is_client}, (secret if is_client else public,)))
        sent += channel.bytes_sent
        channel.close()
    listener.close()
    records.put(
        {
            "kind": "keygen",
            "role": "key_authority",
            "info": adapter.info().__dict__,
            "key_bytes": {"secret_set": len(secret), "public_set": len(public)},
            "bytes_sent": sent,
            **meter.take(),
        }
    )
