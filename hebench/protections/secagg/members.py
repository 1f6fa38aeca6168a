"""The active model's member list: every member's signed advertisement, the digest all members check, and the
neighbour ring each client derives from it.

A client signs its advertisement (its index, sample count and two fresh public keys) with its long-term key from
the trusted set-up (:mod:`hebench.fl.roster`). The aggregator sends every client the same list of signed
advertisements; each client checks every signature against the roster (so the aggregator can neither invent a
member nor change a member's keys), computes the FedAvg weights from the signed sample counts, and derives the
ring itself: the members ordered by ``sha256(digest || index)``, the digest being that of the whole list. Clients
told the same list derive the same ring; a client told another list derives another digest, which its shares
carry sealed (:mod:`hebench.protections.secagg.client`), so a share crossing between two lists is refused.
Freshness comes from the members' keys: each round's are new, so a list from an earlier round has another digest.
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass
from functools import cached_property

from hebench.errors import PartyError
from hebench.fl.roster import Roster
from hebench.net.messages import MessageKind
from hebench.net.transport import Message
from hebench.protections.secagg.common import ring_over
from hebench.protections.secagg.params import SecAggParams
from hebench.protections.secagg.stages import Key

ADVERTISE = b"hebench-secagg/advertise/v1\0"
MEMBERS = b"hebench-secagg/members/v1\0"


def _field(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


def advertisement(index: int, samples: int, share_pk: bytes, mask_pk: bytes) -> bytes:
    """What a client signs when it advertises its keys."""
    return ADVERTISE + struct.pack(">IQ", index, samples) + _field(share_pk) + _field(mask_pk)


@dataclass(frozen=True)
class Member:
    """One member's signed advertisement."""

    index: int
    samples: int
    share_pk: bytes  # DER: its key for sealing shares in transit
    mask_pk: bytes  # DER: its key for pairwise masks
    signature: bytes  # its long-term key's signature on :func:`advertisement`

    @property
    def statement(self) -> bytes:
        return advertisement(self.index, self.samples, self.share_pk, self.mask_pk)


@dataclass(frozen=True)
class MemberList:
    """The members of one round (U1), by index."""

    members: tuple[Member, ...]  # sorted by index, each index once

    @classmethod
    def of(cls, members: list[Member]) -> MemberList:
        ordered = sorted(members, key=lambda m: m.index)
        if len({m.index for m in ordered}) != len(ordered):
            raise PartyError("secagg: a member list names one client twice", "do not trust this aggregator")
        return cls(tuple(ordered))

    @classmethod
    def from_keys(cls, keys: dict[int, Message]) -> MemberList:
        """The list the aggregator builds from each member's ``sa_keys`` (parts: two public keys, a signature)."""
        members = []
        for i, msg in keys.items():
            if len(msg.parts) != 3:
                raise PartyError(f"secagg: client {i} advertised no signature", "run every client in the active model")
            members.append(Member(i, int(msg.meta[Key.SAMPLES]), *msg.parts))
        return cls.of(members)

    @classmethod
    def from_message(cls, msg: Message) -> MemberList:
        """The list a client reads off ``sa_neighbours`` (a malformed one is refused)."""
        indices, samples = msg.meta.get(Key.MEMBERS), msg.meta.get(Key.SAMPLES)
        if not isinstance(indices, list) or not isinstance(samples, list) or len(indices) != len(samples):
            raise PartyError("secagg: the aggregator sent no member list", "run every party in the active model")
        if len(msg.parts) != 3 * len(indices):
            raise PartyError("secagg: the member list's keys do not match its members", "do not trust this aggregator")
        parts = msg.parts
        return cls.of(
            [
                Member(int(i), int(s), parts[3 * k], parts[3 * k + 1], parts[3 * k + 2])
                for k, (i, s) in enumerate(zip(indices, samples, strict=True))
            ]
        )

    def message(self) -> Message:
        """``sa_neighbours`` carrying the whole list (every client gets the same one)."""
        meta = {Key.MEMBERS: self.indices, Key.SAMPLES: [m.samples for m in self.members]}
        parts = tuple(p for m in self.members for p in (m.share_pk, m.mask_pk, m.signature))
        return Message(MessageKind.SA_NEIGHBOURS, meta, parts)

    @property
    def indices(self) -> list[int]:
        return [m.index for m in self.members]

    @cached_property
    def by_index(self) -> dict[int, Member]:
        return {m.index: m for m in self.members}

    @cached_property
    def digest(self) -> bytes:
        """sha256 of the whole list: what every member signs the survivor set under and seals into its shares."""
        h = hashlib.sha256(MEMBERS)
        for m in self.members:
            h.update(struct.pack(">IQ", m.index, m.samples) + _field(m.share_pk) + _field(m.mask_pk))
        return h.digest()

    def forged(self, roster: Roster) -> list[int]:
        """The members whose signature is not their roster key's on their advertisement."""
        return [m.index for m in self.members if not roster.verify(m.index, m.signature, m.statement)]

    def ring(self, params: SecAggParams) -> dict[int, list[int]]:
        """Each member's neighbours on the ring ordered by ``sha256(digest || index)``: public randomness that every
        member recomputes, so the aggregator chooses no neighbour."""
        order = sorted(self.indices, key=lambda i: hashlib.sha256(self.digest + struct.pack(">I", i)).digest())
        return ring_over(order, params)

    def weights(self) -> dict[int, float]:
        """Each member's FedAvg weight, from the signed sample counts."""
        total = sum(m.samples for m in self.members)
        if total <= 0:
            raise PartyError("secagg: the members hold no samples", "every client must train on some data")
        return {m.index: m.samples / total for m in self.members}
