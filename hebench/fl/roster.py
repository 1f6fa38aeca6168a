"""The trusted set-up's client identities: each client's long-term Ed25519 signing key, and the roster of every
client's verification key that every client holds.

A protocol that must not take the aggregator's word for who its members are (secagg's active model) signs what
each client says with its own key and checks every other client's against the roster: the aggregator relays, and
cannot invent a member or speak for one. Keys are raw bytes, so a party context carrying them pickles.
"""

from __future__ import annotations

from dataclasses import dataclass

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat, PublicFormat


@dataclass(frozen=True)
class Roster:
    """Every client's verification key (raw Ed25519, 32 bytes), by client index."""

    keys: tuple[bytes, ...]

    def __len__(self) -> int:
        return len(self.keys)

    def verify(self, client: int, signature: bytes, message: bytes) -> bool:
        """True when ``signature`` is ``client``'s on ``message`` (False for an index outside the roster)."""
        if not 0 <= client < len(self.keys):
            return False
        try:
            Ed25519PublicKey.from_public_bytes(self.keys[client]).verify(signature, message)
        except InvalidSignature:
            return False
        return True


@dataclass(frozen=True)
class ClientIdentity:
    """One client's signing key and the roster it checks the others against."""

    index: int
    signing_key: bytes  # raw Ed25519 private key, 32 bytes
    roster: Roster

    def sign(self, message: bytes) -> bytes:
        return Ed25519PrivateKey.from_private_bytes(self.signing_key).sign(message)


def make_identities(clients: int) -> tuple[ClientIdentity, ...]:
    """A fresh set-up for ``clients`` clients: identity ``i`` is client ``i``'s."""
    private = [Ed25519PrivateKey.generate() for _ in range(clients)]
    roster = Roster(tuple(k.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw) for k in private))
    raw = [k.private_bytes(Encoding.Raw, PrivateFormat.Raw, NoEncryption()) for k in private]
    return tuple(ClientIdentity(i, key, roster) for i, key in enumerate(raw))
