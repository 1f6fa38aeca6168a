"""The hub of a Flower run: hebench's key authority and record sink, started by the run's driver.

Two doors, two credentials. The server's door (the run config's server key)
answers with public key sets only. The clients' door (the federation's client
key, kept in each SuperNode's node config) answers with the secret set in
host-he mode, and refuses it in offload mode, where the secret set goes only to
the offload engines (the hub dials them, as the local key authority does).
Both doors take measurement records, which the driver writes as JSON lines.
Unauthenticated connections share one bounded handshake pool, fair per peer
address (:mod:`hebench.net.admission`), and refusals become ``hub_note``
records counted per (address, kind), never one thread or one record each.
"""

from __future__ import annotations

import socket
import ssl
import threading
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

import numpy as np

from hebench.errors import HebenchError, PartyError, RecordError
from hebench.fl.key_authority import dial_engines
from hebench.fl.key_epochs import EpochKeys
from hebench.fl.party import PartyContext
from hebench.net.admission import HandshakePool
from hebench.net.limits import HANDSHAKE_S
from hebench.net.messages import MessageKind
from hebench.net.refusals import Refusal, RefusalNotes
from hebench.net.transport import Channel, Message
from hebench.protections import KeyHolders
from hebench.results.records import HubNoteRecord, KeyServiceRecord, record_from_json
from hebench.runtime.flower.hub_link import ORACLE_KINDS, ORACLE_PART
from hebench.runtime.flower.hub_wire import admit, hub_tls, open_door, server_context

RUNTIME = "flower"
CLIENT_RECORDS = ("party_round", "party_setup", "mask_agreement", "party_error")
SERVER_RECORDS = (*CLIENT_RECORDS, "flower_run")


@dataclass(frozen=True)
class HubSettings:
    """What the driver tells its hub process: the clients' credential, where to listen, engines to feed."""

    client_key: bytes
    host: str
    ports: tuple[int, int]  # (server door, client door); 0 = any free port
    tls_dir: str | None  # the hub's certificate folder (hub.pem, hub-key.pem, ca.pem)
    engines: tuple[tuple[str, int], ...]
    engine_tls_dir: str | None
    runtime: str = RUNTIME  # what the records say ran them (``flower-sim`` for the simulation engine)


class KeyService:
    """What the hub's doors sent of key sets, and the CPU it took; shared by the doors' threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.sets = {"secret": 0, "public": 0}
        self.bytes_sent, self.cpu_s = 0, 0.0

    def send(self, channel: Channel, which: str, key_set: bytes) -> None:
        started = time.thread_time()
        channel.send(Message(MessageKind.KEYS, {"secret": which == "secret"}, (key_set,)))
        with self._lock:
            self.sets[which] += 1
            self.bytes_sent += len(key_set)
            self.cpu_s += time.thread_time() - started

    def record(self, config: str, runtime: str) -> KeyServiceRecord:
        with self._lock:
            return KeyServiceRecord(
                config=config,
                secret_sets=self.sets["secret"],
                public_sets=self.sets["public"],
                bytes_sent=self.bytes_sent,
                cpu_s=self.cpu_s,
                runtime=runtime,
            )


class Hub:
    def __init__(
        self, ctx: PartyContext, keys: EpochKeys, records: Any, tls: ssl.SSLContext | None, runtime: str = RUNTIME
    ) -> None:
        self.ctx, self.keys, self.records, self.tls, self.runtime = ctx, keys, records, tls, runtime
        self.clients_hold_keys = ctx.config.spec.key_holders is KeyHolders.CLIENTS
        self.service = KeyService()
        self.pool = HandshakePool(HANDSHAKE_S)  # both doors' unauthenticated connections
        self.refusals = RefusalNotes(self._note)

    def serve(self, listener: socket.socket, door: str, credential: bytes) -> None:
        """Accept at one door until the driver closes it; each peer authenticates in the bounded pool, then is
        served on its handshake's thread."""
        peer_label = f"a party at the {door} door"
        while True:
            try:
                raw, peer = listener.accept()
            except OSError:
                return  # closed by the driver's stop
            self.pool.start(
                raw,
                peer,
                lambda sock: admit(sock, self.tls, credential, peer_label, self.ctx.timeout_s),
                lambda channel, d=door: self._handle(channel, d),
                lambda who, kind, err, d=door: self._refuse(who, d, kind, err),
            )

    def _refuse(self, peer: Any, door: str, kind: str, error: BaseException | None) -> None:
        """A peer without the door's credential (or silent, or pushed out): counted, nothing sent."""
        why = error.problem if isinstance(error, HebenchError) else str(error or "") or "closed"
        problem = f"refused a peer at {peer[0]}:{peer[1]} at the {door} door: {kind} ({why})"
        self.refusals.add(str(peer[0]), f"{door} door: {kind}", problem)

    def _note(self, note: Refusal) -> None:
        problem = note.problem if note.count == 1 else f"refused {note.count} peers at {note.peer}: {note.kind}"
        self.records.put(
            HubNoteRecord(
                config=self.ctx.config.label, problem=problem, runtime=self.runtime, peer=note.peer, count=note.count
            )
        )

    def close(self) -> None:
        """Drop handshakes in flight and report the refusals counted so far."""
        self.pool.close()
        self.refusals.flush()

    def _handle(self, channel: Channel, door: str) -> None:
        try:
            hello = channel.recv(MessageKind.HELLO)
            channel.peer = "the server" if door == "server" else f"client {hello.meta.get('client')}"
            vector: list[bytes] = []  # oracle_part slices of the next oracle record
            while (msg := channel.recv()).kind != MessageKind.DONE:
                if msg.kind == ORACLE_PART:
                    vector.append(msg.parts[0])
                    continue
                if msg.kind in ORACLE_KINDS and not msg.parts:
                    msg, vector = Message(msg.kind, msg.meta, (b"".join(vector),)), []
                self._answer(channel, door, msg)
        except HebenchError as err:
            if door == "server" or "closed the connection" not in err.problem:
                self.records.put(HubNoteRecord(config=self.ctx.config.label, problem=err.problem, runtime=self.runtime))
            channel.tell_error("hub", err)
        finally:
            channel.close()

    def _answer(self, channel: Channel, door: str, msg: Message) -> None:
        if msg.kind == MessageKind.EPOCH:
            secret, public = self.keys.get(int(msg.meta["epoch"]))
            if door == "server":
                self.service.send(channel, "public", public)  # never the secret set
            elif not self.clients_hold_keys:
                raise PartyError(
                    f"a client asked for the secret key in {self.ctx.config.mode} mode",
                    "clients hold no keys in this mode: only the node's engine holds keys (set hebench-engine)",
                )
            else:
                self.service.send(channel, "secret", secret)
        elif msg.kind == MessageKind.RECORD:
            allowed = SERVER_RECORDS if door == "server" else CLIENT_RECORDS
            if msg.meta.get("kind") not in allowed:
                raise PartyError(f"record kind '{msg.meta.get('kind')}' is not accepted here", "same hebench?")
            fields = {**msg.meta, "config": self.ctx.config.label, "runtime": self.runtime}
            if msg.meta.get("kind") == "party_error":  # the runner's own message, not a record
                self.records.put(fields)
                return
            if msg.meta.get("kind") == "flower_run":  # the run's last record: the key service's totals go first
                self.refusals.flush()
                self.records.put(self.service.record(self.ctx.config.label, self.runtime))
            try:
                self.records.put(record_from_json(fields, strict=True))
            except RecordError as err:
                raise PartyError(f"a malformed record from {channel.peer}: {err.problem}", "same hebench?") from None
        elif msg.kind in ORACLE_KINDS:
            self.records.put({**msg.meta, "kind": msg.kind, "vector": np.frombuffer(msg.parts[0], dtype="<f4")})
        else:
            raise PartyError(f"unknown request '{msg.kind}'", "protocol mismatch: same hebench?")


def run_hub(ctx: PartyContext, control: Connection, records: Any) -> None:
    """Process entry (``party_main``): ``ctx.credentials.hub`` is the server door's credential."""
    settings: HubSettings = control.recv()
    tls = hub_tls(settings.tls_dir)
    assert ctx.credentials.hub is not None
    doors = {
        "server": (open_door(settings.host, settings.ports[0], tls), ctx.credentials.hub),
        "client": (open_door(settings.host, settings.ports[1], tls), settings.client_key),
    }
    engines = [tuple(e) for e in settings.engines]
    holders = dial_engines(ctx, engines, settings.engine_tls_dir) if ctx.config.spec.needs_engines else []  # type: ignore[arg-type]
    keys = EpochKeys(ctx, holders, records, len(holders) or ctx.suite.data.clients, runtime=settings.runtime)
    hub = Hub(ctx, keys, records, server_context(tls), settings.runtime)
    for door, (listener, credential) in doors.items():
        threading.Thread(target=hub.serve, args=(listener, door, credential), daemon=True).start()
    control.send({door: listener.getsockname()[:2] for door, (listener, _) in doors.items()})
    control.recv()  # the driver says stop
    for listener, _ in doors.values():
        listener.close()
    hub.close()
    for engine in holders:
        engine.send(Message(MessageKind.DONE))
        engine.close()
