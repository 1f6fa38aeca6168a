"""Decryptor-HE's red team: an aggregator that lies to the decryptor, on the real protocol and doors.

:class:`LyingAggregator` keeps the aggregator's door with its real keys (the clients and the decryptor come in),
gets the public set at the key authority's public door, and speaks the real message kinds. Its strategies
(:class:`Strategy`): ``substitute`` (hand the decryptor one victim's upload as the round's aggregate: the decryptor
cannot tell, and a colluding client opens the sealed answer), ``glue`` (several uploads as one "aggregate": N6 of
issue #36), ``replay`` (more aggregates than the run has rounds), ``offset`` (the true aggregate plus a ciphertext
of its choosing: trap weights). Alone it can open nothing it is handed back: the answer is sealed to the clients;
:meth:`LyingAggregator.knock` tries the key authority's other doors for the seal or the secret set.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

import numpy as np

from hebench.crypto import load_adapter
from hebench.crypto.base import HEAdapter
from hebench.errors import PartyError
from hebench.fl.party import AGGREGATOR_DOOR, PUBLIC_DOOR, Credentials
from hebench.fl.peers import Arrival, admit_parties, proven_client
from hebench.net.certs import TLSFiles
from hebench.net.messages import MessageKind
from hebench.net.transport import Channel, Message, connect, listen
from hebench.protections.decryptor_he.decryptor import ROLE


class Strategy(Enum):
    SUBSTITUTE = "substitute"
    GLUE = "glue"
    REPLAY = "replay"
    OFFSET = "offset"


@dataclass
class LyingAggregator:
    """The decryptor-he aggregator with its real credentials (TLS: its certificates)."""

    credentials: Credentials
    tls: TLSFiles | None = None
    timeout_s: float = 20.0
    clients: dict[int, Channel] = field(default_factory=dict)
    public: HEAdapter | None = None

    def __post_init__(self) -> None:
        self.door = listen(self.credentials.door(AGGREGATOR_DOOR), tls=self.tls.serving() if self.tls else None)
        self.decryptor: Channel | None = None

    def admit(self, count: int) -> None:
        """The clients and the decryptor at its door, each known by the key (or certificate) it proved."""

        def identify(channel: Channel, hello: Message) -> int | str:
            return ROLE if hello.meta.get("role") == ROLE else proven_client(channel, hello)

        arrived: dict[int | str, Arrival] = admit_parties(self.door, count + 1, self.timeout_s, "door", identify)
        self.decryptor = arrived.pop(ROLE).channel
        self.clients = {int(i): a.channel for i, a in arrived.items()}

    def keys(self, key_authority: tuple[str, int], epoch: int = 0) -> HEAdapter:
        """The epoch's public set, at the key authority's public door (the clients' and the decryptor's sets are
        pushed first)."""
        channel = connect(
            key_authority,
            self.credentials.key(PUBLIC_DOOR),
            "key authority",
            self.timeout_s,
            tls=self.tls,
            server="key-authority",
            retry_s=0,
            party="aggregator",
        )
        channel.send(Message(MessageKind.HELLO, {"role": "aggregator"}))
        channel.send(Message(MessageKind.EPOCH, {"epoch": epoch}))
        self.public = load_adapter(channel.recv(MessageKind.KEYS).parts[0])
        self.ka = channel
        return self.public

    def start_round(self, r: int, epoch: int = 0) -> None:
        for channel in self.clients.values():
            channel.send(Message(MessageKind.TRAIN, {"round": r, "epoch": epoch}))

    def uploads(self) -> dict[int, list[bytes]]:
        """Each client's upload of the round: its ciphertext chunks."""
        got: dict[int, list[bytes]] = {}
        for i, channel in self.clients.items():
            blobs = []
            while (msg := channel.recv()).kind == MessageKind.UPDATE_CHUNK:
                blobs.append(msg.parts[0])
            if msg.kind != MessageKind.UPDATE_END:
                raise PartyError(f"expected the end of client {i}'s upload, got '{msg.kind}'", "protocol mismatch")
            got[i] = blobs
        return got

    def weighted_sum(self, uploads: dict[int, list[bytes]], weights: dict[int, float]) -> list[bytes]:
        """The honest aggregate: the FedAvg-weighted sum of every upload, chunk by chunk."""
        assert self.public is not None
        out = []
        for k in range(len(next(iter(uploads.values())))):
            terms = [self.public.multiply_plain(self.public.deserialize(b[k]), weights[i]) for i, b in uploads.items()]
            total = terms[0]
            for term in terms[1:]:
                total = self.public.add(total, term)
            out.append(self.public.serialize(total))
        return out

    def offset(self, blobs: list[bytes], delta: np.ndarray) -> list[bytes]:
        """Strategy ``offset``: the aggregate plus ``delta``, encrypted under the public set."""
        assert self.public is not None
        out, at = [], 0
        for blob in blobs:
            enc = self.public.deserialize(blob)
            out.append(self.public.serialize(self.public.add(enc, self.public.encrypt(delta[at : at + enc.length]))))
            at += enc.length
        return out

    def ask(self, blobs: list[bytes], epoch: int = 0) -> bytes:
        """Hand the decryptor ``blobs`` as a round's aggregate (strategies ``substitute``, ``glue``, ``replay``);
        its sealed answer, or PartyError for its refusal."""
        assert self.decryptor is not None
        self.decryptor.send(Message(MessageKind.DECRYPT, {"epoch": epoch}, tuple(blobs)))
        return self.decryptor.recv(MessageKind.DECRYPTED).parts[0]

    def relay(self, r: int, token: bytes, weights: dict[int, float], epoch: int = 0) -> None:
        """The sealed answer to every client, as the honest aggregator relays the round's aggregate."""
        meta = {"round": r, "epoch": epoch, "weights": {str(i): w for i, w in weights.items()}, "sealed": True}
        for channel in self.clients.values():
            channel.send(Message(MessageKind.AGGREGATE, meta, (token,)))
        for channel in self.clients.values():
            channel.recv(MessageKind.ACK)

    def knock(self, door: tuple[str, int], server: str, claims: tuple[str, ...]) -> list[str]:
        """Every key it holds, as each of ``claims``, at another door of the key authority (the clients' door for
        the seal, the decryptor's for the secret set); the ones that opened it."""
        keys = dict(self.credentials.knocks)
        for name, kept in self.credentials.doors.items():
            keys.update({f"{party}'s at {name}": key for party, key in kept.keys.items()})
        opened = []
        for label, key in keys.items():
            for claim in claims:
                try:
                    connect(door, key, server, 5, tls=self.tls, server=server, retry_s=0, party=claim).close()
                except PartyError:
                    continue
                opened.append(f"{claim} with {label}")
        return opened

    def close(self) -> None:
        for channel in [*self.clients.values(), *([self.decryptor] if self.decryptor else [])]:
            channel.close()
        if getattr(self, "ka", None) is not None:
            self.ka.send(Message(MessageKind.DONE))
            self.ka.close()
        self.door.close()
