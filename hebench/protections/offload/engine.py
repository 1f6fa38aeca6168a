"""The offload engine: holds the keys, encrypts the host's update, decrypts the aggregate.

A long-lived server (``hebench engine serve``) that can run on a DPU. Two
kinds of peer connect: the key authority (pushes a secret key set per epoch,
with the run's decryption allowance) and hosts (one session each). Who a peer
is comes from its credential, never from its hello: with TLS, its certificate
(only ``hebench-key-authority`` delivers keys; engine ``i`` serves host ``i``);
an engine the local runtime started without TLS admits only its own host and
the key authority, each by its own door key (:mod:`hebench.net.door_keys`). An
engine decrypts at most one aggregate of the model's length per round of a run,
for its own host (:mod:`hebench.fl.allowance`), whichever session asks. An
engine the local runtime started ends when the runtime tells it to, on its control pipe.
Unauthenticated peers wait in a bounded handshake pool
(:mod:`hebench.net.admission`). For a session the engine dials the
aggregator as that client's proxy: the host sends plaintext to the engine
only; the aggregator receives ciphertext only. The update streams through in
chunks, and a sender thread forwards chunk k while chunk k+1 is encrypted.
Per-round engine measurements travel back to the host in the result message.
"""

from __future__ import annotations

import logging
import os
import queue
import socket
import sys
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from hebench.crypto.exact_weights import PreWeight
from hebench.errors import HebenchError, PartyError
from hebench.fl.allowance import Allowance, Decryptions
from hebench.fl.keyring import KeyRing
from hebench.fl.meter import PhaseMeter
from hebench.fl.party import KEY_AUTHORITY, client_party
from hebench.fl.streams import AGGREGATE_CHUNKS
from hebench.net import stream
from hebench.net.admission import FAILED, HandshakePool
from hebench.net.certs import HOST_CN_PREFIX, KEY_AUTHORITY_CN, TLSFiles, common_name, host_cn, served_host
from hebench.net.door_keys import DoorKeys
from hebench.net.limits import HANDSHAKE_S
from hebench.net.messages import MessageKind
from hebench.net.transport import Channel, Message, connect
from hebench.protections.offload.service import ServiceSession

log = logging.getLogger("hebench.engine")


@dataclass(frozen=True)
class EngineConfig:
    host: str = "127.0.0.1"
    port: int = 0
    tls: TLSFiles | None = None
    # without TLS: the door keys of its own host and the key authority (local engines), or one shared key
    # (``hebench engine serve --authkey-file``: a trusted network, where a peer's word is all there is)
    authkey: bytes | DoorKeys | None = None
    cores: tuple[int, ...] | None = None
    timeout_s: float = 900.0
    transcripts: str | None = None  # folder: keep every byte received (security tests)
    max_frame_bytes: int | None = None  # bound on one authenticated frame; None: HEBENCH_MAX_FRAME_BYTES or 1 GiB
    handshake_s: float = HANDSHAKE_S  # a peer must finish TLS and the key challenge within this
    upload_tls: TLSFiles | None = None  # transport: tls: this engine's certificate at the aggregator's door


class EngineServer:
    """Accepts peers, authenticates each on its own thread, serves key deliveries and sessions.

    A refused peer or a failed session never stops the server: it becomes one line in :attr:`errors`
    (the last 100) and in ``on_error`` when given (the CLI prints it), else in the ``hebench.engine`` log.
    """

    def __init__(self, config: EngineConfig, on_error: Callable[[str], None] | None = None) -> None:
        if config.tls is None and config.authkey is None:
            raise PartyError("an engine needs TLS certificates or a shared key", "pass --tls-cert/--tls-key/--tls-ca")
        self.config = config
        if config.cores:
            os.sched_setaffinity(0, set(config.cores))
        self._rings: dict[str, KeyRing] = {}  # run id -> key sets by epoch: a long-lived engine serves many runs
        self._allowances: dict[str, Allowance] = {}  # run id -> what it may decrypt (from the key authority)
        self._decryptions: dict[tuple[str, int], Decryptions] = {}  # (run, host) -> what it decrypted so far
        self._rings_lock = threading.Lock()
        self._tls = stream.server_context(config.tls) if config.tls else None
        # the one host this engine serves (engine-i.pem serves host-i); None: any host of its CA (an engine
        # certificate from an older `hebench engine certs`, which names no host)
        self.serves = served_host(common_name(config.tls.cert)) if config.tls else None
        self._sock = stream.listen(config.host, config.port)
        self.address: tuple[str, int] = self._sock.getsockname()[:2]
        self.errors: deque[str] = deque(maxlen=100)
        self._on_error = on_error
        self._pool = HandshakePool(config.handshake_s)

    def keys(self, run: str) -> KeyRing:
        """The key sets delivered for one run (created on first use, by either the delivery or the session)."""
        with self._rings_lock:
            if run not in self._rings:
                self._rings[run] = KeyRing(timeout_s=self.config.timeout_s)
            return self._rings[run]

    def decryptions(self, run: str, host: int) -> Decryptions:
        """What this engine decrypted for ``host`` in ``run``, against the allowance its key authority delivered
        with the run's key sets (PartyError if none came: nothing is decrypted without one)."""
        with self._rings_lock:
            if run not in self._allowances:
                raise PartyError(
                    "no decryption allowance came with this run's key sets", "the key authority must deliver one"
                )
            if (run, host) not in self._decryptions:
                self._decryptions[(run, host)] = Decryptions(self._allowances[run], f"the engine of host {host}")
            return self._decryptions[(run, host)]

    def _transcript(self, name: str):
        if not self.config.transcripts:
            return None
        from pathlib import Path

        folder = Path(self.config.transcripts)
        folder.mkdir(parents=True, exist_ok=True)
        return folder / f"{name}.bin"

    def serve_forever(self) -> None:
        while True:
            try:
                raw, peer = self._sock.accept()
            except OSError:
                return  # listener closed
            served = lambda framed, p=peer: self._handle(framed, _address(p))  # noqa: E731 - runs on the peer's thread
            self._pool.start(raw, peer, self._admit, served, self._refuse)

    def close(self) -> None:
        try:
            self._sock.shutdown(socket.SHUT_RDWR)  # wakes the accept loop
        except OSError:
            pass
        self._sock.close()
        self._pool.close()

    def _note(self, peer: str, problem: str) -> None:
        line = f"{peer}: {problem}"
        self.errors.append(line)
        if self._on_error is not None:
            self._on_error(line)
        else:
            log.warning(line)

    def _admit(self, raw: socket.socket) -> stream.FramedSocket:
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return stream.admit(
            raw,
            tls=self._tls,
            authkey=self.config.authkey,
            handshake_s=self.config.handshake_s,
            max_frame=self.config.max_frame_bytes,
        )

    def _refuse(self, peer: Any, kind: str, error: BaseException | None) -> None:
        """One bad peer never stops the engine: one line each (``hebench engine serve`` prints it)."""
        why = error.problem if isinstance(error, PartyError) else str(error or "") or "closed"
        why = why.removeprefix("refused a peer: ")
        self._note(_address(peer), f"refused a peer: {why}" if kind == FAILED else f"refused a peer: {kind} ({why})")

    def _serves(self, cn: str | None) -> bool:
        """With TLS, a host session only from the host this engine serves (any host for an older certificate)."""
        if self._tls is None:
            return True
        if self.serves is not None:
            return cn == self.serves
        return (cn or "").startswith(HOST_CN_PREFIX)

    def _is_key_authority(self, framed: stream.FramedSocket) -> bool:
        """The peer proved it is the key authority: its certificate, or its own door key (a shared key proves
        nothing beyond holding it)."""
        if self._tls is not None:
            return framed.peer_common_name() == KEY_AUTHORITY_CN
        return framed.party == KEY_AUTHORITY if isinstance(self.config.authkey, DoorKeys) else True

    def _host(self, framed: stream.FramedSocket, hello: dict[str, Any]) -> int:
        """The host a session is for: the one its credential proves, which must be the client its hello names."""
        client = int(hello["client"])
        cn = framed.peer_common_name()
        if self._tls is not None:
            if not self._serves(cn):
                raise PartyError(f"refused a session from '{cn}'", self._serving_fix())
            if cn != host_cn(client):
                raise PartyError(f"'{cn}' opened a session as host {client}", "a host opens sessions as itself only")
        elif isinstance(self.config.authkey, DoorKeys) and framed.party != client_party(client):
            raise PartyError(
                f"'{framed.party}' opened a session as host {client}",
                "a host opens sessions as itself only, at its own engine",
            )
        return client

    def _handle(self, framed: stream.FramedSocket, address: str = "peer") -> None:
        channel = Channel(framed, "peer", self.config.timeout_s)  # type: ignore[arg-type]
        if self.config.max_frame_bytes:
            channel.max_frame = self.config.max_frame_bytes
        try:
            hello = channel.recv(MessageKind.HELLO)
            role = hello.meta.get("role")
            if role == "key_authority":
                if not self._is_key_authority(framed):
                    who = framed.peer_common_name() or framed.party
                    raise PartyError(f"refused key delivery from '{who}'", "only the key authority may deliver keys")
                channel.peer = "key authority"
                channel.record_to(self._transcript("engine-keys"))
                self._receive_keys(channel)
            elif role == "host":
                host = self._host(framed, hello.meta)
                channel.peer = f"host {host}"
                channel.record_to(self._transcript("engine-from-host"))
                Session(self, channel, hello.meta).run()
            elif role == "service":  # a framework's client mod: encrypt/decrypt on request, results go back
                host = self._host(framed, hello.meta)
                if not hello.meta.get("run"):
                    raise PartyError("the service session names no run", "update the host to this hebench version")
                run = str(hello.meta["run"])
                channel.peer = f"host {host}"
                channel.record_to(self._transcript("engine-from-host"))
                ServiceSession(self.keys(run), channel, lambda: self.decryptions(run, host)).run()
            else:
                raise PartyError(f"unknown role '{role}'", "connect as key_authority, host or service")
        except HebenchError as err:
            self._note(address, err.problem)
            channel.tell_error("engine", err)
        except (KeyError, TypeError, ValueError) as err:  # a hello or message missing fields
            self._note(address, f"malformed request: {err!r}")
            channel.tell_error("engine", PartyError(f"malformed request: {err!r}", "same hebench on both ends?"))
        finally:
            channel.close()

    def _serving_fix(self) -> str:
        if self.serves is not None:
            return f"this engine serves only {self.serves}: each host dials its own engine (engine-i serves host-i)"
        return "hosts need a hebench-host certificate from this engine's CA"

    def _receive_keys(self, channel: Channel) -> None:
        while True:
            msg = channel.recv()
            if msg.kind == MessageKind.DONE:
                return
            if msg.kind != MessageKind.KEYS:
                raise PartyError(f"unexpected '{msg.kind}' from the key authority", "protocol mismatch")
            run = str(msg.meta.get("run", ""))
            if "allow" in msg.meta:
                allowance = Allowance.from_json(msg.meta["allow"])
                with self._rings_lock:
                    self._allowances.setdefault(run, allowance)  # one allowance a run: a later one changes nothing
            self.keys(run).add(int(msg.meta["epoch"]), msg.parts[0])


class Session:
    """One host's rounds: relay between the host (plaintext) and the aggregator (ciphertext)."""

    def __init__(self, engine: EngineServer, host: Channel, hello: dict[str, Any]) -> None:
        self.engine, self.host = engine, host
        self.client = int(hello["client"])
        self.samples = int(hello["samples"])
        self.chunk_values = int(hello["chunk_values"])
        if not hello.get("run"):
            raise PartyError("the host's session names no run", "update the host to this hebench version")
        self.run_id = str(hello["run"])
        self.keys = engine.keys(self.run_id)
        address = tuple(hello["aggregator"])
        authkey, config = bytes.fromhex(hello["authkey"]), engine.config
        self.agg = connect(
            address,  # type: ignore[arg-type]
            authkey,  # the host's own key at the aggregator's door: this engine uploads as its proxy
            "aggregator",
            config.timeout_s,
            tls=config.upload_tls,
            server="aggregator",
            party=client_party(self.client),
        )
        self.meter = PhaseMeter()

    def run(self) -> None:
        self.agg.send(Message(MessageKind.HELLO, {"role": "client", "client": self.client, "samples": self.samples}))
        try:
            while True:
                msg = self.agg.recv()
                if msg.kind == MessageKind.DONE:
                    self.host.send(Message(MessageKind.DONE))
                    return
                self._round(msg)
        finally:
            self.agg.close()

    REPLIES: ClassVar[dict[str, tuple[str, str]]] = {
        MessageKind.TRAIN: (MessageKind.AGGREGATE, MessageKind.RESULT),
        MessageKind.MAP: (MessageKind.MAP_SUM, MessageKind.MAP_RESULT),
    }

    def _round(self, msg: Message) -> None:
        """A training round ("train") or the mask agreement ("map"): relay, encrypt, decrypt.

        A round this client does not train in starts with the aggregate itself (its first chunk).
        """
        r, epoch = int(msg.meta["round"]), int(msg.meta["epoch"])
        before = (self.host.bytes_sent, self.host.bytes_received, self.agg.bytes_sent, self.agg.bytes_received)
        with self.meter.phase("keys"):
            adapter = self.keys.get(epoch)
        stage = msg.kind if msg.kind in self.REPLIES else (MessageKind.MAP if r < 0 else MessageKind.TRAIN)
        expect, result_kind = self.REPLIES[stage]
        if msg.kind in self.REPLIES:
            self.host.send(Message(msg.kind, {"round": r, "epoch": epoch}))
            pre = PreWeight.from_json(msg.meta["pre"]) if msg.meta.get("pre") else None
            self._stream_update(adapter, r, pre)
            with self.meter.phase("wait"):
                msg = self.agg.recv()
        last = self._relay_aggregate(adapter, msg, expect, r, epoch)
        report = {
            "cores": sorted(os.sched_getaffinity(0)),
            "host_bytes_sent": self.host.bytes_sent - before[0],
            "host_bytes_received": self.host.bytes_received - before[1],
            "aggregator_bytes_sent": self.agg.bytes_sent - before[2],
            "aggregator_bytes_received": self.agg.bytes_received - before[3],
            **self.meter.take(),
        }
        meta = {"round": r, "epoch": epoch, "weights": last.meta["weights"], "engine": report, "plain_parts": 0}
        meta.update({k: last.meta[k] for k in ("weight_total", "skipped") if k in last.meta})  # hebench.faults
        self.host.send(Message(result_kind, meta))
        ack = self.host.recv(MessageKind.ACK)
        self.agg.send(
            Message(MessageKind.ACK, {"round": r, **({"left": ack.meta["left"]} if "left" in ack.meta else {})})
        )

    def _relay_aggregate(self, adapter: Any, msg: Message, expect: str, r: int, epoch: int) -> Message:
        """Decrypt the aggregate chunk by chunk, each to the host as it is done (plaintext chunks pass through);
        returns the aggregate's end message."""
        head = {"round": r, "epoch": epoch}
        while msg.kind in AGGREGATE_CHUNKS:
            if msg.kind == MessageKind.AGGREGATE_PLAIN:  # selective: the plaintext sums pass through
                with self.meter.phase("send"):
                    self.host.send(Message(MessageKind.RESULT_PLAIN, {**head, **_place(msg)}, msg.parts))
            else:
                self._decrypt_to_host(adapter, msg.parts[0], {**head, **_place(msg)})
            with self.meter.phase("wait"):
                msg = self.agg.recv()
        if msg.kind != expect or msg.parts:
            raise PartyError(
                f"expected the streamed '{expect}' from the aggregator, got '{msg.kind}' with {len(msg.parts)} parts",
                "protocol mismatch: same hebench on the engine and the aggregator?",
            )
        return msg

    def _decrypt_to_host(self, adapter: Any, blob: bytes, meta: dict[str, Any]) -> None:
        with self.meter.phase("deserialize"):
            enc = adapter.deserialize(blob)
        self.engine.decryptions(self.run_id, self.client).admit(int(meta["round"]), enc.length)  # before decrypting
        with self.meter.phase("decrypt"):
            values = adapter.decrypt(enc).astype("<f4")
        del enc
        with self.meter.phase("send"):
            self.host.send(Message(MessageKind.RESULT_CHUNK, meta, (values.tobytes(),)))

    def _stream_update(self, adapter: Any, r: int, pre: PreWeight | None = None) -> None:
        """Encrypt chunks as they arrive; a sender thread forwards the previous chunk meanwhile."""
        outbox: queue.Queue[Message | None] = queue.Queue(maxsize=4)
        failure: list[BaseException] = []

        def sender() -> None:
            try:
                while (item := outbox.get()) is not None:
                    self.agg.send(item)
            except BaseException as err:  # surfaced after the join below
                failure.append(err)

        thread = threading.Thread(target=sender, daemon=True)
        thread.start()
        # encrypt whole ciphertexts: chunk_values rounded to a multiple of the adapter's slots
        size = max(adapter.slots, self.chunk_values // adapter.slots * adapter.slots)
        pending = np.empty(0, dtype="<f4")

        def forward(values: np.ndarray) -> None:
            with self.meter.phase("encrypt"):
                enc = adapter.encrypt(values, pre)
            with self.meter.phase("serialize"):
                blob = adapter.serialize(enc)
            with self.meter.phase("send"):
                outbox.put(Message(MessageKind.UPDATE_CHUNK, {"round": r}, (blob,)))

        try:
            while True:
                with self.meter.phase("receive"):
                    msg = self.host.recv()
                if msg.kind == MessageKind.LEAVE:  # the host left the round before uploading (hebench.faults)
                    outbox.put(Message(MessageKind.LEAVE, {"round": r, "phase": msg.meta.get("phase", "unknown")}))
                    break
                if msg.kind == MessageKind.UPDATE_END:
                    if len(pending):
                        forward(pending)
                    outbox.put(Message(MessageKind.UPDATE_END, {"round": r, "samples": int(msg.meta["samples"])}))
                    break
                if msg.kind == MessageKind.PLAIN_PART:  # selective: the unencrypted coordinates, forwarded as they are
                    outbox.put(Message(MessageKind.PLAIN_PART, {"round": r}, msg.parts))
                    continue
                if msg.kind != MessageKind.UPDATE_CHUNK:
                    raise PartyError(f"expected update chunks from the host, got '{msg.kind}'", "protocol mismatch")
                pending = np.concatenate([pending, np.frombuffer(msg.parts[0], dtype="<f4")])
                while len(pending) >= size:
                    forward(pending[:size])
                    pending = pending[size:]
        finally:
            outbox.put(None)
            with self.meter.phase("send"):
                thread.join()
        if failure:
            raise PartyError(f"forwarding to the aggregator failed: {failure[0]}", "see the aggregator's error")


def _address(peer: Any) -> str:
    return f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else "a peer"


def _place(msg: Message) -> dict[str, int]:
    """Where an aggregate chunk goes: its offset into its part, and the part's length."""
    return {"offset": int(msg.meta["offset"]), "values": int(msg.meta["values"])}


def serve(config: EngineConfig, ready: Any = None, on_error: Callable[[str], None] | None = None) -> None:
    """Run an engine until its listener closes; ``ready(address)`` is called once it listens, ``on_error(line)``
    once per refused peer or failed session."""
    server = EngineServer(config, on_error)
    if ready is not None:
        ready(server.address)
    try:
        server.serve_forever()
    finally:
        server.close()


STOP = "stop"  # what the local runtime sends on an engine's control pipe when its configuration ends


def local_engine_main(config: EngineConfig, control: Any) -> None:
    """Process entry for an engine the runner starts on this machine: it serves until the runtime sends
    :data:`STOP` on ``control`` (or the runtime is gone), then ends."""
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import torch

    torch.set_num_threads(1)

    server = EngineServer(config)
    control.send(server.address)
    threading.Thread(target=_close_when_told, args=(server, control), daemon=True).start()
    try:
        server.serve_forever()
    finally:
        server.close()
    # Told to stop: nothing is left to write (transcripts are flushed frame by frame), so skip the interpreter's
    # teardown, a full garbage collection of torch's and the HE library's modules that took ~10 s on a loaded
    # 2-core machine, while the runtime waited for the process to end.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _close_when_told(server: EngineServer, control: Any) -> None:
    try:
        while control.recv() != STOP:
            pass
    except (EOFError, OSError):  # the runtime is gone: nobody needs this engine any more
        pass
    server.close()
