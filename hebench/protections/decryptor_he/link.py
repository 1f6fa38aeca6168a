"""``decryptor-he``'s client side: encrypt under the epoch's public set, open the aggregate the decryptor sealed.

The client holds the public set and the epoch's sealing key only; a key set with a secret key in it is refused
(the mode's point is that no client can decrypt another's upload).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from hebench.crypto import HEAdapter, load_adapter
from hebench.errors import PartyError
from hebench.fl.cipher import KeyHolderCipher
from hebench.fl.link import DirectLink, Link, Opened, dial_aggregator, dial_key_authority
from hebench.fl.meter import PhaseMeter
from hebench.fl.party import PartyContext, Wiring
from hebench.fl.shared_keys import SHARED_KEYS
from hebench.net.transport import Message
from hebench.protections.decryptor_he.decryptor import open_sealed
from hebench.protections.decryptor_he.keys import SealedKeys


class DecryptorLink(DirectLink):
    """Uploads ciphertext like host-he; the aggregate comes back sealed by the decryptor, not as ciphertext."""

    def __init__(self, base: DirectLink, keys: SealedKeys) -> None:
        super().__init__(base.channel, base.cipher, base.chunk_values)
        self.keys = keys

    def open(self, msg: Message, epoch: int, meter: PhaseMeter) -> Opened:
        if msg.meta.get("skipped"):  # too few arrived (or one was lost mid-upload): no aggregate
            return Opened(np.empty(0, np.float32), np.empty(0, np.float32), {}, skipped=True)
        if not msg.meta.get("sealed"):
            raise PartyError("decryptor-he: the aggregate did not come from the decryptor", "same hebench everywhere?")
        _, seal = self.keys.get(epoch)
        with meter.phase("decrypt"):
            vector = open_sealed(msg.parts[0], seal)
        return Opened(vector, np.empty(0, np.float32), msg.meta["weights"], **Opened.survivors_of(msg.meta))


def public_only(keys: SealedKeys) -> Callable[[int], HEAdapter]:
    """The epoch's key set for encrypting, refused if it carries a secret key."""

    def fetch(epoch: int) -> HEAdapter:
        adapter, _ = keys.get(epoch)
        if adapter.has_secret_key:
            raise PartyError(
                "decryptor-he: this client was handed a secret key",
                "the key authority must give clients the public set only",
            )
        return adapter

    return fetch


def decryptor_link(ctx: PartyContext, wiring: Wiring, samples: int, meter: PhaseMeter) -> Link:
    """Public keys from the key authority (key holders' door), uploads to the aggregator."""
    with meter.phase("keys"):
        ka = dial_key_authority(ctx, wiring)
    keys = SealedKeys(ka, SHARED_KEYS.load if ctx.worker is not None else load_adapter, ctx.timeout_s)
    cipher = KeyHolderCipher(public_only(keys), require_secret=False, on_close=keys.close)
    base = DirectLink(dial_aggregator(ctx, wiring, samples), cipher, ctx.suite.runtime.chunk_values)
    return DecryptorLink(base, keys)
