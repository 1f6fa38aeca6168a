"""``decryptor-he``: the decryptor party, and the aggregator's half of its round.

No client holds a secret key: clients encrypt under the epoch's public set. The aggregator sums the
ciphertexts as in host-he and sends the decryptor the one aggregate of the round; the decryptor (the
only holder of the secret set, from the key authority) decrypts it, seals the plaintext to the clients
with the epoch's sealing key and returns it; the aggregator relays the sealed aggregate to the clients.
The decryptor never sees an individual client's ciphertext from an honest aggregator, and it decrypts
at most one aggregate per round of the run, of at most the model's length (:mod:`hebench.fl.allowance`):
several uploads glued into one "aggregate" are refused. It cannot tell an aggregate from one client's
ciphertext, which is why its answer is sealed: a malicious aggregator that sends it one client's ciphertext
learns nothing unless a client colludes, and then one victim per round (see docs/threats.md). It runs as
the helper process ``aggregator-1``, and comes in at the key authority's and the aggregator's doors with
its own keys.
"""

from __future__ import annotations

import time
from multiprocessing.connection import Connection
from typing import Any

import numpy as np
from cryptography.fernet import Fernet

from hebench.crypto.base import HEAdapter
from hebench.errors import PartyError
from hebench.fl.aggregator import Aggregator, Collected, sum_uploads
from hebench.fl.allowance import Decryptions
from hebench.fl.meter import PhaseMeter
from hebench.fl.party import AGGREGATOR_DOOR, DECRYPTOR_DOOR, PartyContext, Wiring
from hebench.net.messages import MessageKind
from hebench.net.transport import Channel, Message, connect
from hebench.protections.decryptor_he.keys import SealedKeys
from hebench.protections.selective.split import PLAIN
from hebench.results.records import PartyRoundRecord, PartySetupRecord

ROLE = "decryptor"  # its hello role at the aggregator's and the key authority's doors


def decrypt_aggregate(agg: Aggregator, chosen: list[int], adapter: HEAdapter) -> Collected:
    """Sum the chosen clients' ciphertexts (public keys), have the decryptor open the sum, relay it sealed.

    Clients that left or were lost are out of the sum (the survivors' FedAvg, renormalised by the clients after
    opening it: ``weight_total``); a round with nobody in the sum, or one a client lost mid-upload spoiled, is
    skipped, and the decryptor is told so (it decrypts nothing that round)."""
    got = sum_uploads(agg, chosen, adapter)
    assert got.total is not None
    peer = agg.peers[ROLE]
    spoiled = got.total.spoiled_by
    if spoiled is not None or not got.weights:
        with agg.meter.phase("decryptor"):
            peer.send(Message(MessageKind.DECRYPT, {"epoch": agg.epoch, "skipped": True}))
        why = f"client {spoiled} was lost mid-upload" if spoiled is not None else "no client's upload arrived"
        return Collected((), 0, {}, got.update_bytes, {}, left=got.left, failed=f"decryptor-he: {why}")
    with agg.meter.phase("aggregate"):  # the streamed sum's chunks, serialised for the decryptor
        blobs, _ = got.total.blobs()
    with agg.meter.phase("decryptor"):
        peer.send(Message(MessageKind.DECRYPT, {"epoch": agg.epoch}, blobs))
        sealed = peer.recv(MessageKind.DECRYPTED)
    return Collected(sealed.parts, 0, got.weights, got.update_bytes, {**got.meta, "sealed": True}, left=got.left)


def open_sealed(token: bytes, seal: bytes) -> np.ndarray:
    """The plaintext aggregate inside the decryptor's sealed answer."""
    return PLAIN.decrypt(PLAIN.deserialize(Fernet(seal).decrypt(token)))


def _dial(ctx: PartyContext, address: Any, door: str, peer: str, role: str, server: str) -> Channel:
    """The decryptor's channel to ``server`` at ``door``, with its own key there (its certificate under TLS)."""
    channel = connect(
        address,
        ctx.credentials.key(door),
        peer,
        ctx.timeout_s,
        ctx.transcript(f"{role}-{server}"),
        tls=ctx.tls_for(role),
        server=server,
        retry_s=ctx.suite.measure.setup_timeout_s,
        party=role,
    )
    channel.send(Message(MessageKind.HELLO, {"role": ROLE}))
    return channel


def run_decryptor(ctx: PartyContext, control: Connection, records: Any) -> None:
    """Process entry: its helper index, then where the key authority and the aggregator listen."""
    role = f"aggregator-{int(control.recv())}"
    wiring: Wiring = control.recv()
    control.send(None)
    meter = PhaseMeter()
    if ctx.allowance is None:
        raise PartyError("the decryptor was started without a decryption allowance", "start it from the runtime")
    opened = Decryptions(ctx.allowance, "the decryptor")
    with meter.phase("connect"):
        ka = _dial(ctx, wiring.key_authority, DECRYPTOR_DOOR, "key authority", role, "key-authority")
        agg = _dial(ctx, wiring.aggregator, AGGREGATOR_DOOR, "aggregator", role, "aggregator")
    records.put(PartySetupRecord(config=ctx.config.label, role=role, **meter.measured()))
    keys = SealedKeys(ka, timeout_s=ctx.timeout_s)  # pushes taken as they arrive
    for r in range(ctx.start_round, ctx.suite.training.rounds):  # one aggregate a round, no more
        sent, received = agg.bytes_sent, agg.bytes_received
        msg = agg.recv(MessageKind.DECRYPT)
        started = time.perf_counter()  # its round: from the aggregate's arrival
        epoch = int(msg.meta["epoch"])
        if msg.meta.get("skipped"):  # nobody's upload in the sum (or one spoiled it): nothing to decrypt
            records.put(_round_record(ctx, role, r, epoch, agg, sent, received, 0, started, meter))
            continue
        with meter.phase("keys"):
            adapter, seal = keys.get(epoch)
        if not adapter.has_secret_key:
            raise PartyError("the decryptor received no secret key", "the key authority must send it the secret set")
        with meter.phase("deserialize"):
            aggregate = [adapter.deserialize(b) for b in msg.parts]
        try:
            opened.admit(r, sum(e.length for e in aggregate))  # one aggregate of the model's length, or nothing
        except PartyError as err:
            agg.tell_error(role, err)
            raise
        with meter.phase("decrypt"):
            vector = np.concatenate([adapter.decrypt(e) for e in aggregate]).astype(np.float32)
        with meter.phase("seal"):
            token = Fernet(seal).encrypt(PLAIN.serialize(PLAIN.encrypt(vector)))
        with meter.phase("send"):
            agg.send(Message(MessageKind.DECRYPTED, {"round": r, "epoch": epoch}, (token,)))
        records.put(_round_record(ctx, role, r, epoch, agg, sent, received, len(token), started, meter))
    keys.until_done()
    keys.close()
    agg.close()


def _round_record(
    ctx: PartyContext,
    role: str,
    r: int,
    epoch: int,
    agg: Channel,
    sent: int,
    received: int,
    aggregate_bytes: int,
    started: float,
    meter: PhaseMeter,
) -> PartyRoundRecord:
    return PartyRoundRecord(
        config=ctx.config.label,
        role=role,
        round=r,
        epoch=epoch,
        bytes_received=agg.bytes_received - received,
        bytes_sent=agg.bytes_sent - sent,
        aggregate_bytes=aggregate_bytes,
        round_wall_s=time.perf_counter() - started,
        **meter.measured(),
    )
