"""Door keys bound to one party: a peer names itself, then proves that party's own key at that door.

Every door of a run admits a set of parties (the aggregator's door: the clients; a share holder's door: the
clients; the key authority's public door: the aggregator). Each (door, party) pair has its own key, derived from a
run secret that only the runtime holds (:class:`DoorKeyIssuer`); a party is handed its own keys, a door the keys
of the parties it admits (:class:`DoorKeys`). Without TLS the dialler first names the party it is (a short
:func:`claim` frame) and the door runs the HMAC challenge both ways with *that party's* key, so a connection
carries who the peer proved to be, never only what it says; a key of one door opens no other door, and a key of
one party stands for no other party. Under TLS the identity is the peer certificate's party, and the challenge
inside the session runs with that party's key.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from hebench.errors import PartyError

CLAIM_MAGIC = b"hebench-party "
PARTY_NAME = re.compile(r"[a-z][a-z0-9-]{0,62}")
MAX_CLAIM = len(CLAIM_MAGIC) + 63


@dataclass(frozen=True)
class DoorKeys:
    """The parties one door admits, each by its own key there (``keys``: party name -> key)."""

    door: str
    keys: Mapping[str, bytes] = field(default_factory=dict)

    def key_of(self, party: str | None) -> bytes | None:
        """``party``'s key at this door (None: not admitted here)."""
        return self.keys.get(party) if party else None

    def challenge_key(self, party: str | None) -> bytes:
        """The key to challenge a peer that named ``party`` with: its own, or for a party not admitted here a random
        one, so that a stranger fails the same challenge as a wrong key (and learns nothing from the door)."""
        return self.key_of(party) or secrets.token_bytes(32)

    def refusal(self, party: str | None) -> PartyError:
        """Why a peer that proved nothing, or named a party not admitted here, was refused."""
        if party is None:
            return PartyError(f"a peer at the {self.door} door named no party", "same hebench on both ends?")
        if party not in self.keys:
            return PartyError(
                f"'{party}' is not admitted at the {self.door} door",
                "a party's key (or certificate) opens only the doors its role may use",
            )
        return PartyError(f"the peer failed to prove it is '{party}' at the {self.door} door", "use this run's keys")


def claim(party: str) -> bytes:
    """The frame a dialler sends first at a door that admits by party: the party it is."""
    if not PARTY_NAME.fullmatch(party):
        raise PartyError(f"'{party}' is not a party name", "name parties as the runtime does (client-0, aggregator)")
    return CLAIM_MAGIC + party.encode()


def claimed(frame: bytes) -> str:
    """The party a dialler named in its :func:`claim` frame; PartyError for anything else."""
    name = frame[len(CLAIM_MAGIC) :].decode("ascii", "replace") if frame.startswith(CLAIM_MAGIC) else ""
    if not PARTY_NAME.fullmatch(name):
        raise PartyError("a peer did not name the party it is", "same hebench on both ends?")
    return name


class DoorKeyIssuer:
    """A run's secret, from which the key of every (door, party) pair is derived. Only the runtime holds it: it
    hands each party its own keys and each door the keys of the parties it admits."""

    def __init__(self, secret: bytes | None = None) -> None:
        self._secret = secret or secrets.token_bytes(32)

    def key(self, door: str, party: str) -> bytes:
        message = b"hebench door key\0" + door.encode() + b"\0" + party.encode()
        return hmac.digest(self._secret, message, hashlib.sha256)

    def door(self, door: str, parties: Iterable[str], aliases: Mapping[str, str] | None = None) -> DoorKeys:
        """The keys of ``door`` for ``parties``; ``aliases`` (name -> party): another identity that proves the same
        party's key (an offload engine whose certificate names it, uploading as its host's proxy)."""
        keys = {party: self.key(door, party) for party in parties}
        keys.update({alias: self.key(door, party) for alias, party in (aliases or {}).items()})
        return DoorKeys(door, keys)
