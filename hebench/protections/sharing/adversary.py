"""Secret sharing's red team: aggregator 0 (the coordinator) that lies, on the real protocol and its doors.

:class:`LyingCoordinator` keeps the coordinator's door with its real keys and speaks the real message kinds. Its
strategies (:class:`Strategy`):

- ``impersonate-clients`` (N4 of issue #36): take client slots at a share holder with every key aggregator 0 holds
  (its own, and the clients' keys at its own door), or under TLS its own certificate, then say those clients left,
  so that the holder's "sum" is the victim's share alone; with its own share of the victim it would read the
  victim's update. Each door knows a client by its own key at that door, so every attempt is refused.
- ``offset-sums``: hand chosen clients the coordinator's sum plus an offset of its choosing, so that their rebuilt
  aggregate (their next model) is the true one moved as the coordinator likes: the lever of model inconsistency
  (a dead model for the non-victims) and of trap weights.

Whatever it does, the coordinator itself holds one share of each upload: :func:`read_update` shows what it reads.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

import numpy as np

from hebench.errors import PartyError
from hebench.fl.party import AGGREGATOR_DOOR, Credentials, client_party
from hebench.fl.peers import Arrival, admit_parties, proven_client
from hebench.fl.ring_stream import spans
from hebench.net.certs import TLSFiles
from hebench.net.messages import MessageKind
from hebench.net.transport import Channel, Message, connect, listen
from hebench.protections.sharing.params import SecretSharingParams
from hebench.protections.sharing.ring_shares import combine, decode, encode


class Strategy(Enum):
    IMPERSONATE_CLIENTS = "impersonate-clients"
    OFFSET_SUMS = "offset-sums"


@dataclass
class Attempt:
    """One try at a door: who it claimed to be, with which key, and whether the door let it in."""

    claimed: str
    key: str
    admitted: bool
    why: str = ""


@dataclass
class LyingCoordinator:
    """Aggregator 0 with its real credentials (and, under TLS, its real certificate), lying."""

    credentials: Credentials
    params: SecretSharingParams
    tls: TLSFiles | None = None
    timeout_s: float = 20.0
    attempts: list[Attempt] = field(default_factory=list)
    slots: dict[int, Channel] = field(default_factory=dict)  # client slots it holds at a share holder

    def __post_init__(self) -> None:
        self.door = listen(self.credentials.door(AGGREGATOR_DOOR), tls=self.tls.serving() if self.tls else None)
        self.clients: dict[int, Channel] = {}

    def keys(self) -> dict[str, bytes]:
        """Every key aggregator 0 holds: its own at each door, and each client's at its own door."""
        held = {f"its own at {door}": key for door, key in self.credentials.knocks.items()}
        for name, door in self.credentials.doors.items():
            held.update({f"{party}'s at {name}": key for party, key in door.keys.items()})
        return held

    def impersonate(self, holder: tuple[str, int], holder_name: str, clients: list[int]) -> dict[int, Channel]:
        """Strategy ``impersonate-clients``: try every key it holds as each of ``clients`` at share holder
        ``holder_name`` (``aggregator-1``) listening at ``holder``; the slots it got (each said hello as that
        client)."""
        for client in clients:
            for label, key in self.keys().items():
                try:
                    channel = connect(
                        holder,
                        key,
                        holder_name,
                        self.timeout_s,
                        tls=self.tls,
                        server=holder_name,
                        retry_s=0,
                        party=client_party(client),
                    )
                    channel.send(Message(MessageKind.HELLO, {"role": "client", "client": client}))
                except PartyError as err:
                    self.attempts.append(Attempt(client_party(client), label, False, err.problem))
                    continue
                self.attempts.append(Attempt(client_party(client), label, True))
                self.slots[client] = channel
                break
        return self.slots

    def say_left(self, round_index: int) -> None:
        """Tell the holder that every client whose slot it took left the round before training."""
        for channel in self.slots.values():
            channel.send(Message(MessageKind.LEAVE, {"round": round_index, "phase": "before_train"}))

    def holder_sum(self, client: int) -> np.ndarray | None:
        """The holder's sum as the slot of ``client`` receives it (None: it holds no slot)."""
        channel = self.slots.get(client)
        return None if channel is None else _read_words(channel, MessageKind.SHARE_SUM_CHUNK, MessageKind.SHARE_SUM)[0]

    def admit(self, count: int) -> dict[int, Channel]:
        """The real clients at the coordinator's door (known by their keys, as the honest coordinator knows them)."""
        arrived: dict[int | str, Arrival] = admit_parties(self.door, count, self.timeout_s, "door", proven_client)
        self.clients = {int(i): a.channel for i, a in arrived.items()}
        self.samples = {int(i): int(a.hello.meta["samples"]) for i, a in arrived.items()}
        return self.clients

    def first_shares(self) -> dict[int, np.ndarray]:
        """Each client's first share of this round's upload (what the coordinator receives)."""
        return {i: _read_words(ch, MessageKind.SHARE_CHUNK, MessageKind.UPDATE)[0] for i, ch in self.clients.items()}

    def send_sums(
        self, round_index: int, shares: dict[int, np.ndarray], offsets: dict[int, np.ndarray] | None = None
    ) -> None:
        """The coordinator's sum to every client, as the honest coordinator streams it; strategy ``offset-sums``:
        client i gets its sum plus ``offsets[i]`` (a float vector), so that its rebuilt aggregate moves by it."""
        total = combine(list(shares.values()))
        samples_total = sum(self.samples[i] for i in shares)
        weights = {str(i): self.samples[i] / samples_total for i in shares}
        for i, channel in self.clients.items():
            words = total
            if offsets and i in offsets:
                words = total + encode(
                    offsets[i], samples_total, self.params, np.random.default_rng(0)
                )  # same offset, same words
            head = {"round": round_index, "epoch": 0, "samples_total": samples_total}
            for start, stop in spans(len(words), 4096):
                meta = {**head, "offset": start, "values": len(words)}
                channel.send(Message(MessageKind.AGGREGATE_CHUNK, meta, (words[start:stop].tobytes(),)))
            end = {**head, "weights": weights, "summed": sorted(shares), "plain_parts": 0, "streamed": True}
            channel.send(Message(MessageKind.AGGREGATE, end))

    def close(self) -> None:
        for channel in [*self.slots.values(), *self.clients.values()]:
            channel.close()
        self.door.close()


def read_update(shares: list[np.ndarray], samples: int, params: SecretSharingParams) -> np.ndarray:
    """What the adversary reads of an upload from the shares it holds of it (all K: the update)."""
    return decode(combine(shares), samples, params)


def _read_words(channel: Channel, chunk: str, end: str) -> tuple[np.ndarray, Message]:
    """A streamed ring vector (its chunks, then its end message)."""
    words: np.ndarray | None = None
    while (msg := channel.recv()).kind == chunk:
        offset, values = int(msg.meta["offset"]), int(msg.meta["values"])
        part = np.frombuffer(msg.parts[0], dtype=np.uint64)
        if words is None:
            words = np.zeros(values, dtype=np.uint64)
        words[offset : offset + len(part)] = part
    if msg.kind != end:
        raise PartyError(f"expected '{end}', got '{msg.kind}'", "protocol mismatch")
    return (np.zeros(0, np.uint64) if words is None else words), msg
