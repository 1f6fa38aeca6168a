"""The key authority: makes a key set per epoch; holders get the secret set, the aggregator the public one.

Key holders are the clients (host-he) or the offload engines (the authority
dials them). The authority listens at two doors with two credentials: the
holders' door and the aggregator's door. A party is admitted by the door's
credential, never by what it says it is, so the aggregator (which holds only
its own door's credential) cannot ask for the secret set. The aggregator asks
for each epoch's keys as rounds reach it (rotation every K rounds); the
authority pushes the secret set to every holder before it answers. A mode whose
secret set goes to one helper instead (decryptor-he) names its own loop in its
spec (``key_service``): this core never imports a protocol's parties.
"""

from __future__ import annotations

from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from hebench.errors import PeerClosedError
from hebench.fl.key_epochs import EpochKeys
from hebench.fl.party import PartyContext
from hebench.net.certs import ENGINE_CN, TLSFiles, engine_cn
from hebench.net.messages import MessageKind
from hebench.net.refusals import Refusal
from hebench.net.stream import dial
from hebench.net.transport import Channel, Door, Message, accept, listen
from hebench.protections import KeyHolders
from hebench.protections.spec import resolve
from hebench.results.records import SecurityNoteRecord


def dial_engines(ctx: PartyContext, endpoints: list[tuple[str, int]], tls_dir: str | None) -> list[Channel]:
    """Connect to each offload engine as the key authority (by certificate with TLS, else by shared key)."""
    tls = None
    if tls_dir:
        folder = Path(tls_dir)
        tls = TLSFiles(folder / "key-authority.pem", folder / "key-authority-key.pem", folder / "ca.pem")
    channels = []
    for i, address in enumerate(endpoints):
        framed = dial(
            tuple(address),
            tls=tls,
            authkey=None if tls else ctx.credentials.engine,
            peer=f"engine {i}",
            server_names=(engine_cn(i), ENGINE_CN),  # engine i (or an engine certificate from an older folder)
            retry_s=ctx.suite.measure.setup_timeout_s,
        )
        ch = Channel(framed, f"engine {i}", ctx.timeout_s)  # type: ignore[arg-type]
        ch.send(Message(MessageKind.HELLO, {"role": "key_authority"}))
        channels.append(ch)
    return channels


def door(credential: bytes, name: str, ctx: PartyContext, records: Any) -> Door:
    """A door that admits only holders of ``credential``; peers refused there are reported as records, counted
    per (address, kind)."""

    def report(note: Refusal) -> None:
        records.put(
            SecurityNoteRecord(
                config=ctx.config.label,
                role="key_authority",
                door=name,
                problem=note.problem,
                peer=note.peer,
                count=note.count,
            )
        )

    return listen(credential, on_refuse=report, tls=ctx.tls_for("key-authority"))


def admit(listener: Door, name: str, count: int, ctx: PartyContext) -> list[Channel]:
    """The first ``count`` parties that prove they hold this door's credential."""
    return [accept(listener, f"a party at the {name} door", ctx.timeout_s) for _ in range(count)]


def run_key_authority(ctx: PartyContext, control: Connection, records: Any) -> None:
    creds = ctx.credentials
    assert creds.key_holder is not None and creds.public is not None
    holders_door = door(creds.key_holder, "key holders'", ctx, records)
    public_door = door(creds.public, "aggregator's", ctx, records)
    addresses = {"key_holder": holders_door.address, "public": public_door.address}
    spec = ctx.config.spec
    if spec.key_holders is KeyHolders.DECRYPTOR:  # its one key holder comes in at the engine door
        assert creds.engine is not None and spec.key_service is not None
        decryptor_door = door(creds.engine, "decryptor's", ctx, records)
        control.send({**addresses, "decryptor": decryptor_door.address})
        control.recv()
        resolve(spec.key_service)(ctx, holders_door, public_door, decryptor_door, records)  # the mode's own loop
        return
    control.send(addresses)
    engines, tls_dir = control.recv()
    engine_channels = dial_engines(ctx, engines, tls_dir)
    holders = list(engine_channels)
    if ctx.config.spec.key_holders is KeyHolders.CLIENTS:
        clients = admit(holders_door, "key holders'", ctx.suite.data.clients, ctx)
        for client in clients:
            client.peer = f"client {int(client.recv(MessageKind.HELLO).meta['client'])}"
        holders += clients
    holders_door.close()
    (aggregator,) = admit(public_door, "aggregator's", 1, ctx)
    aggregator.recv(MessageKind.HELLO)
    aggregator.peer = "the aggregator"
    public_door.close()
    keys = EpochKeys(ctx, holders, records, len(holders))
    while True:
        request = aggregator.recv()
        if request.kind == MessageKind.DONE:
            break
        epoch = int(request.meta["epoch"])
        _, public = keys.get(epoch)  # holders have the secret set before the aggregator hears back
        aggregator.send(Message(MessageKind.KEYS, {"epoch": epoch, "secret": False}, (public,)))  # never the secret
    for engine in engine_channels:  # a clean end of the key channel (a bare close reads as a fault there)
        try:
            engine.send(Message(MessageKind.DONE))
        except PeerClosedError:  # an engine that died is its client's dropout, not the end of the run
            if not ctx.suite.faults_tolerated(ctx.config):
                raise
    for holder in [*holders, aggregator]:
        holder.close()
