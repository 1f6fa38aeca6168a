"""The key authority: makes a key set per epoch; holders get the secret set, the aggregator the public one.

Key holders are the clients (host-he) or the offload engines (the authority
dials them, each with its own key at that engine's door, or as the key
authority by certificate, and hands each the run's decryption allowance with
its key sets). The authority listens at two doors: the holders' door admits the
clients, the public door the aggregator, each by its own key (or certificate).
A party is known by what it proves, never by what it says it is, so the
aggregator (whose key opens only the public door) cannot ask for the secret
set, and a client is the client its key names. The aggregator asks
for each epoch's keys as rounds reach it (rotation every K rounds); the
authority pushes the secret set to every holder before it answers. A mode whose
secret set goes to one helper instead (decryptor-he) names its own loop in its
spec (``key_service``): this core never imports a protocol's parties.
"""

from __future__ import annotations

from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from hebench.errors import PartyError, PeerClosedError
from hebench.fl.key_epochs import EpochKeys
from hebench.fl.party import (
    DECRYPTOR_DOOR,
    KEY_AUTHORITY,
    KEY_HOLDERS_DOOR,
    PUBLIC_DOOR,
    PartyContext,
    engine_door,
)
from hebench.fl.peers import admit_parties, proven_client
from hebench.net.certs import ENGINE_CN, TLSFiles, engine_cn
from hebench.net.door_keys import DoorKeys
from hebench.net.messages import MessageKind
from hebench.net.refusals import Refusal
from hebench.net.stream import dial
from hebench.net.transport import Channel, Door, Message, listen
from hebench.protections import KeyHolders
from hebench.protections.spec import resolve
from hebench.results.records import SecurityNoteRecord


def dial_engines(ctx: PartyContext, endpoints: list[tuple[str, int]], tls_dir: str | None) -> list[Channel]:
    """Connect to each offload engine as the key authority (by certificate with TLS, else by its own key at that
    engine's door)."""
    tls = None
    if tls_dir:
        folder = Path(tls_dir)
        tls = TLSFiles(folder / "key-authority.pem", folder / "key-authority-key.pem", folder / "ca.pem")
    channels = []
    for i, address in enumerate(endpoints):
        framed = dial(
            tuple(address),
            tls=tls,
            authkey=None if tls else ctx.credentials.key(engine_door(i)),
            peer=f"engine {i}",
            server_names=(engine_cn(i), ENGINE_CN),  # engine i (or an engine certificate from an older folder)
            retry_s=ctx.suite.measure.setup_timeout_s,
            party=KEY_AUTHORITY,
        )
        ch = Channel(framed, f"engine {i}", ctx.timeout_s)  # type: ignore[arg-type]
        ch.send(Message(MessageKind.HELLO, {"role": "key_authority"}))
        channels.append(ch)
    return channels


def door(credential: DoorKeys, name: str, ctx: PartyContext, records: Any) -> Door:
    """A door that admits only the parties of ``credential``, each by its own key (or certificate); peers refused
    there are reported as records, counted per (address, kind)."""

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


def admit_clients(listener: Door, count: int, ctx: PartyContext) -> list[Channel]:
    """The ``count`` clients at the key holders' door, each named by the client it proved to be."""
    arrived = admit_parties(listener, count, ctx.timeout_s, "key holders' door", proven_client)
    for index, arrival in arrived.items():
        arrival.channel.peer = f"client {index}"
    return [arrived[i].channel for i in sorted(arrived, key=int)]


def admit_one(listener: Door, name: str, ctx: PartyContext) -> Channel:
    """The one party ``listener`` admits (the aggregator at the public door, the decryptor at its own), known by
    the key (or certificate) it proved."""

    def identify(channel: Channel, hello: Message) -> str:
        if channel.party is None:
            raise PartyError(f"a peer at the {name} door proved no party", "same hebench?")
        return channel.party

    (arrival,) = admit_parties(listener, 1, ctx.timeout_s, f"{name} door", identify).values()
    return arrival.channel


def keys_of(ctx: PartyContext, name: str) -> DoorKeys:
    """The keys of the key authority's door ``name`` (a door its run has no use for admits nobody)."""
    return ctx.credentials.doors.get(name) or DoorKeys(name, {})


def run_key_authority(ctx: PartyContext, control: Connection, records: Any) -> None:
    holders_door = door(keys_of(ctx, KEY_HOLDERS_DOOR), "key holders'", ctx, records)
    public_door = door(keys_of(ctx, PUBLIC_DOOR), "aggregator's", ctx, records)
    addresses = {"key_holder": holders_door.address, "public": public_door.address}
    spec = ctx.config.spec
    if spec.key_holders is KeyHolders.DECRYPTOR:  # its one key holder comes in at a door of its own
        assert spec.key_service is not None
        decryptor_door = door(keys_of(ctx, DECRYPTOR_DOOR), "decryptor's", ctx, records)
        control.send({**addresses, "decryptor": decryptor_door.address})
        control.recv()
        resolve(spec.key_service)(ctx, holders_door, public_door, decryptor_door, records)  # the mode's own loop
        return
    control.send(addresses)
    engines, tls_dir = control.recv()
    engine_channels = dial_engines(ctx, engines, tls_dir)
    holders = list(engine_channels)
    if ctx.config.spec.key_holders is KeyHolders.CLIENTS:
        holders += admit_clients(holders_door, ctx.suite.data.clients, ctx)
    holders_door.close()
    aggregator = admit_one(public_door, "aggregator's", ctx)
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
