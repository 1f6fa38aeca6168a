"""The key authority's side of ``decryptor-he``: only the decryptor gets the secret key set.

Three doors, each admitting its parties by their own keys (or certificates): the decryptor's door
(the decryptor only) gets the secret set; the key holders' door, where the clients come in, gets the
public set; the aggregator's door gets the public set on request, as in every mode. Each epoch also
has a *sealing key* (Fernet, from the OS's CSPRNG) that the decryptor and the clients get and the
aggregator never does: the decryptor seals the aggregate it decrypts to the clients, so the aggregator
relays it without reading it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cryptography.fernet import Fernet

from hebench.crypto import HEAdapter, load_adapter
from hebench.errors import PeerClosedError
from hebench.fl.key_authority import admit_clients, admit_one
from hebench.fl.key_epochs import EpochKeys
from hebench.fl.keyring import KeyRing
from hebench.fl.party import PartyContext
from hebench.net.messages import MessageKind
from hebench.net.transport import Channel, Door, Message


class SealedEpochKeys(EpochKeys):
    """Epoch key sets where ``pushed[0]`` (the decryptor) gets (secret set, sealing key) and every other pushed
    party (a client) gets (public set, sealing key), all before the aggregator hears back."""

    def __init__(self, ctx: PartyContext, decryptor: Channel, clients: list[Channel], records: Any) -> None:
        super().__init__(ctx, [decryptor, *clients], records, holders=1)
        self.seals: dict[int, bytes] = {}

    def _push(self, epoch: int, secret: bytes, public: bytes) -> None:
        seal = self.seals.setdefault(epoch, Fernet.generate_key())
        decryptor, *clients = self.pushed
        meta = {"epoch": epoch, "run": self.ctx.run_id}
        decryptor.send(Message(MessageKind.KEYS, {**meta, "secret": True}, (secret, seal)))
        for client in clients:
            try:
                client.send(Message(MessageKind.KEYS, {**meta, "secret": False}, (public, seal)))
            except PeerClosedError:  # a client that died is a dropout, not the end of the run (the decryptor's is)
                if not self.ctx.suite.faults_tolerated(self.ctx.config):
                    raise
                self.pushed.remove(client)


def serve_decryptor_keys(
    ctx: PartyContext, clients_door: Door, public_door: Door, decryptor_door: Door, records: Any
) -> None:
    """Admit the decryptor, the clients and the aggregator at their doors, then answer the aggregator's requests
    for each epoch's public set (pushing every party its own set first)."""
    decryptor = admit_one(decryptor_door, "decryptor's", ctx)
    decryptor.peer = "the decryptor"
    decryptor_door.close()
    clients = admit_clients(clients_door, ctx.suite.data.clients, ctx)
    clients_door.close()
    aggregator = admit_one(public_door, "aggregator's", ctx)
    aggregator.peer = "the aggregator"
    public_door.close()
    keys = SealedEpochKeys(ctx, decryptor, clients, records)
    while (request := aggregator.recv()).kind != MessageKind.DONE:
        epoch = int(request.meta["epoch"])
        _, public = keys.get(epoch)
        aggregator.send(
            Message(MessageKind.KEYS, {"epoch": epoch, "secret": False}, (public,))
        )  # never the secret or seal
    decryptor.send(Message(MessageKind.DONE))
    for party in [decryptor, *clients, aggregator]:
        party.close()


class SealedKeys(KeyRing):
    """Key sets and sealing keys by epoch, (adapter, seal), taken as the key authority pushes them (the decryptor's
    and the clients'): :meth:`get` waits for an epoch, :meth:`until_done` for the authority's end of the run."""

    def __init__(self, source: Channel, load: Callable[[bytes], HEAdapter] = load_adapter, timeout_s: float = 900.0):
        super().__init__(source, timeout_s, load, unpack=lambda msg: (load(msg.parts[0]), msg.parts[1]))

    def get(self, epoch: int) -> tuple[HEAdapter, bytes]:
        return super().get(epoch)
