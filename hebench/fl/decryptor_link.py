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
from hebench.fl.decryptor import open_sealed
from hebench.fl.decryptor_keys import SealedKeys
from hebench.fl.link import DirectLink, Link, Opened
from hebench.fl.meter import PhaseMeter
from hebench.fl.party import PartyContext, Wiring
from hebench.fl.shared_keys import SHARED_KEYS
from hebench.net.transport import Message, connect


class DecryptorLink(DirectLink):
    """Uploads ciphertext like host-he; the aggregate comes back sealed by the decryptor, not as ciphertext."""

    def __init__(self, base: DirectLink, keys: SealedKeys) -> None:
        super().__init__(base.channel, base.cipher)
        self.keys = keys

    def open(self, msg: Message, epoch: int, meter: PhaseMeter) -> Opened:
        if not msg.meta.get("sealed"):
            raise PartyError("decryptor-he: the aggregate did not come from the decryptor", "same hebench everywhere?")
        _, seal = self.keys.get(epoch)
        with meter.phase("decrypt"):
            vector = open_sealed(msg.parts[0], seal)
        return Opened(vector, np.empty(0, np.float32), msg.meta["weights"])


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
    index, creds = ctx.client_index, ctx.credentials
    assert wiring.key_authority is not None and creds.key_holder is not None and creds.aggregator is not None
    with meter.phase("keys"):
        ka = connect(
            wiring.key_authority,
            creds.key_holder,
            "key authority",
            ctx.timeout_s,
            ctx.transcript(f"client-{index}-keys"),
            tls=ctx.tls_for(f"client-{index}"),
            server="key-authority",
            retry_s=ctx.suite.measure.setup_timeout_s,
        )
        ka.send(Message("hello", {"role": "client", "client": index}))
    keys = SealedKeys(ka, SHARED_KEYS.load if ctx.worker is not None else load_adapter)
    cipher = KeyHolderCipher(public_only(keys), require_secret=False, on_close=ka.close)
    agg = connect(
        wiring.aggregator,
        creds.aggregator,
        "aggregator",
        ctx.timeout_s,
        ctx.transcript(f"client-{index}"),
        tls=ctx.tls_for(f"client-{index}"),
        server="aggregator",
        retry_s=ctx.suite.measure.setup_timeout_s,
    )
    agg.send(Message("hello", {"role": "client", "client": index, "samples": samples}))
    return DecryptorLink(DirectLink(agg, cipher), keys)
