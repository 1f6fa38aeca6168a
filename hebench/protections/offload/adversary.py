"""Offload's red team: an aggregator and client hosts that lie, on the real protocol, engines and doors.

:class:`LyingAggregator` keeps the aggregator's door with its real keys (engines come in as their hosts' proxies),
holds the public key set and speaks the real message kinds. Its strategies (:class:`Strategy`) against a
colluding host's engine: ``substitute`` (hand it one victim's upload as "the aggregate": the engine cannot tell),
``glue`` (several uploads as one aggregate), ``replay`` (a second aggregate in a round), ``offset`` (the true
aggregate plus a ciphertext of its choosing: a dead model, trap weights). :class:`ColludingHost` is a client with
its real keys (or certificate): ``oracle`` (its own engine as a decryption service for anyone's upload),
``other-engine`` (a session at another client's engine), ``push-keys`` (its own key set to an engine, as the key
authority). :func:`engine_attempts` tries every key a party holds at an engine's door.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

import numpy as np

from hebench.crypto.base import HEAdapter
from hebench.errors import PartyError, PeerClosedError
from hebench.fl.party import AGGREGATOR_DOOR, KEY_AUTHORITY, Credentials, client_party, engine_door
from hebench.fl.peers import admit_parties, proven_client
from hebench.net.certs import TLSFiles
from hebench.net.messages import MessageKind
from hebench.net.stream import dial
from hebench.net.transport import Channel, Message, listen
from hebench.protections.offload.link import engine_names, engine_tls


class Strategy(Enum):
    SUBSTITUTE = "substitute"
    GLUE = "glue"
    REPLAY = "replay"
    OFFSET = "offset"
    ORACLE = "oracle"
    OTHER_ENGINE = "other-engine"
    PUSH_KEYS = "push-keys"


@dataclass
class Attempt:
    """One try at a door or a request: what was tried, and whether it went through (else why not)."""

    what: str
    admitted: bool
    why: str = ""


@dataclass
class LyingAggregator:
    """The offload aggregator with its real credentials (TLS: its server certificate) and the public key set."""

    credentials: Credentials
    public: HEAdapter
    tls: TLSFiles | None = None
    timeout_s: float = 20.0
    engines: dict[int, Channel] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.door = listen(self.credentials.door(AGGREGATOR_DOOR), tls=self.tls.serving() if self.tls else None)

    def admit(self, count: int) -> dict[int, Channel]:
        """The engines that dial in as their hosts' proxies, each known by the key (or certificate) it proved."""
        arrived = admit_parties(self.door, count, self.timeout_s, "aggregator's door", proven_client)
        self.engines = {int(i): a.channel for i, a in arrived.items()}
        return self.engines

    def start_round(self, r: int, clients: list[int], epoch: int = 0) -> None:
        for i in clients:
            self.engines[i].send(Message(MessageKind.TRAIN, {"round": r, "epoch": epoch}))

    def uploads(self, clients: list[int]) -> dict[int, list[bytes]]:
        """Each client's upload of the round: its ciphertext chunks (what the aggregator receives)."""
        got: dict[int, list[bytes]] = {}
        for i in clients:
            blobs = []
            while (msg := self.engines[i].recv()).kind == MessageKind.UPDATE_CHUNK:
                blobs.append(msg.parts[0])
            if msg.kind != MessageKind.UPDATE_END:
                raise PartyError(f"expected the end of client {i}'s upload, got '{msg.kind}'", "protocol mismatch")
            got[i] = blobs
        return got

    def send_aggregate(self, client: int, r: int, blobs: list[bytes], epoch: int = 0) -> None:
        """``blobs`` as client's aggregate of round ``r``, streamed as the honest aggregator streams one (strategy
        ``substitute``: one victim's upload; ``glue``: several; ``replay``: a second one in the same round)."""
        offset, sizes = 0, [self.public.deserialize(b).length for b in blobs]
        total = sum(sizes)
        channel = self.engines[client]
        for blob, size in zip(blobs, sizes, strict=True):
            meta = {"round": r, "epoch": epoch, "offset": offset, "values": total}
            channel.send(Message(MessageKind.AGGREGATE_CHUNK, meta, (blob,)))
            offset += size
        channel.send(Message(MessageKind.AGGREGATE, {"round": r, "epoch": epoch, "weights": {}, "streamed": True}))

    def heard_back(self, client: int) -> Message:
        """What the engine says after the aggregate (its host's acknowledgement, or its refusal as an error)."""
        return self.engines[client].recv(MessageKind.ACK)

    def weighted_sum(self, uploads: dict[int, list[bytes]], weights: dict[int, float]) -> list[bytes]:
        """The honest aggregate: the FedAvg-weighted sum of every upload, chunk by chunk."""
        chunks = []
        for k in range(len(next(iter(uploads.values())))):
            total = None
            for i, blobs in uploads.items():
                term = self.public.multiply_plain(self.public.deserialize(blobs[k]), weights[i])
                total = term if total is None else self.public.add(total, term)
            assert total is not None
            chunks.append(self.public.serialize(total))
        return chunks

    def offset(self, blobs: list[bytes], delta: np.ndarray) -> list[bytes]:
        """Strategy ``offset``: the aggregate plus ``delta``, encrypted under the public set (one chunk per blob)."""
        out, at = [], 0
        for blob in blobs:
            enc = self.public.deserialize(blob)
            out.append(self.public.serialize(self.public.add(enc, self.public.encrypt(delta[at : at + enc.length]))))
            at += enc.length
        return out

    def close(self) -> None:
        for channel in self.engines.values():
            channel.close()
        self.door.close()


def knock(
    address: tuple[str, int],
    engine: int,
    hello: dict,
    then: list[Message],
    *,
    claim: str | None,
    key: bytes | None,
    tls: TLSFiles | None,
    what: str,
) -> Attempt:
    """Dial engine ``engine``'s door as ``claim`` with ``key`` (or under ``tls`` with its certificate), say
    ``hello``, send ``then`` and ``done``: admitted if the engine took it all and ended the session, refused if the
    handshake failed or the engine answered with its refusal."""
    try:
        framed = dial(address, tls=tls, authkey=None if tls else key, peer=f"engine {engine}", retry_s=0, party=claim)
    except PartyError as err:
        return Attempt(what, False, err.problem)
    channel = Channel(framed, f"engine {engine}", 10)  # type: ignore[arg-type]
    try:
        try:
            for msg in [Message(MessageKind.HELLO, hello), *then, Message(MessageKind.DONE)]:
                channel.send(msg)
        except PartyError:  # it hung up before the request was through: its refusal is waiting to be read
            pass
        channel.recv()  # its refusal (an error), an answer, or, for a session it took to the end, the hang-up
    except PeerClosedError:
        return Attempt(what, True, "the engine took it and ended the session")
    except PartyError as err:
        return Attempt(what, False, err.problem)
    finally:
        channel.close()
    return Attempt(what, True, "the engine answered")


@dataclass
class ColludingHost:
    """Client ``index``'s host with its real keys, or (``tls_dir``: the ``hebench engine certs`` folder) its
    certificate, colluding with the aggregator."""

    index: int
    credentials: Credentials
    run_id: str
    tls_dir: str | None = None
    timeout_s: float = 20.0

    @property
    def tls(self) -> TLSFiles | None:
        return engine_tls(self.tls_dir, self.index)

    def oracle(self, address: tuple[str, int], blobs: list[bytes], epoch: int = 0) -> list[np.ndarray | PartyError]:
        """Strategy ``oracle``: ask its own engine, as a decryption service, to open each of ``blobs`` (anyone's
        upload); what came back for each (its values, or the engine's refusal)."""
        framed = dial(
            address,
            tls=self.tls,
            authkey=None if self.tls else self.credentials.key(engine_door(self.index)),
            peer=f"engine {self.index}",
            server_names=engine_names(self.index),
            retry_s=0,
            party=client_party(self.index),
        )
        channel = Channel(framed, f"engine {self.index}", self.timeout_s)  # type: ignore[arg-type]
        channel.send(Message(MessageKind.HELLO, {"role": "service", "client": self.index, "run": self.run_id}))
        answers: list[np.ndarray | PartyError] = []
        for blob in blobs:
            try:
                channel.send(Message(MessageKind.DECRYPT, {"epoch": epoch}, (blob,)))
                answers.append(np.frombuffer(channel.recv(MessageKind.PLAINTEXT).parts[0], dtype="<f4"))
            except PartyError as err:
                answers.append(err)
                break
        answers += [PartyError("the engine had hung up")] * (len(blobs) - len(answers))
        channel.close()
        return answers

    def attempts(self, address: tuple[str, int], engine: int, role: str, then: list[Message]) -> list[Attempt]:
        """``role`` at client ``engine``'s engine, as itself, as that client and as the key authority, with every
        key it holds (under TLS: its certificate, the only one it has)."""
        hello = {"role": role, "client": engine, "run": self.run_id}
        if self.tls is not None:
            return [
                knock(address, engine, hello, then, claim=None, key=None, tls=self.tls, what=f"{role}, certificate")
            ]
        found = []
        for claim in (client_party(self.index), client_party(engine), KEY_AUTHORITY):
            for door, key in self.credentials.knocks.items():
                what = f"{role} at engine {engine} as {claim} with its key at {door}"
                found.append(knock(address, engine, hello, then, claim=claim, key=key, tls=None, what=what))
        return found

    def other_engine(self, address: tuple[str, int], engine: int, blob: bytes) -> list[Attempt]:
        """Strategy ``other-engine``: ask client ``engine``'s engine to decrypt ``blob`` in a session of its own."""
        return self.attempts(address, engine, "service", [Message(MessageKind.DECRYPT, {"epoch": 0}, (blob,))])

    def push_keys(self, address: tuple[str, int], engine: int, keys: HEAdapter, epoch: int = 1) -> list[Attempt]:
        """Strategy ``push-keys``: push its own secret key set to client ``engine``'s engine as the key authority,
        for a later epoch (the victim would then encrypt under a key the colluder holds)."""
        meta = {"epoch": epoch, "run": self.run_id, "secret": True}
        push = Message(MessageKind.KEYS, meta, (keys.export_keys(secret=True),))
        return self.attempts(address, engine, "key_authority", [push])


def engine_attempts(
    credentials: Credentials,
    addresses: dict[int, tuple[str, int]],
    run_id: str,
    key_set: bytes,
    blob: bytes,
    tls: TLSFiles | None = None,
) -> list[Attempt]:
    """Every key ``credentials`` hold (its own at each door, and each key of a door it keeps) at every engine's
    door, claiming the engine's host and the key authority, to deliver ``key_set`` and to have ``blob`` decrypted
    in run ``run_id``; under TLS ``tls``'s certificate."""
    keys = {f"its own at {door}": key for door, key in credentials.knocks.items()}
    for name, door in credentials.doors.items():
        keys.update({f"{party}'s at {name}": key for party, key in door.keys.items()})
    found = []
    for engine, address in addresses.items():
        requests = [
            ({"role": "key_authority"}, [Message(MessageKind.KEYS, {"epoch": 9, "run": run_id}, (key_set,))]),
            (
                {"role": "service", "client": engine, "run": run_id},
                [Message(MessageKind.DECRYPT, {"epoch": 0}, (blob,))],
            ),
        ]
        for hello, then in requests:
            if tls is not None:
                found.append(knock(address, engine, hello, then, claim=None, key=None, tls=tls, what="certificate"))
                continue
            for label, key in keys.items():
                for claim in (client_party(engine), KEY_AUTHORITY):
                    what = f"{hello['role']} at engine {engine} as {claim} with {label}"
                    found.append(knock(address, engine, hello, then, claim=claim, key=key, tls=None, what=what))
    return found
