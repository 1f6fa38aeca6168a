"""The secret-sharing mode's client side: one share to each of K aggregators; the sum rebuilt from theirs.

Both ways stream chunk by chunk (:mod:`hebench.fl.ring_stream`): each chunk of the update is encoded, split and
its K shares sent (``share_chunk`` {round, offset, values}) before the next is encoded, then the end messages
(``update`` to the coordinator, ``share`` to each holder); the K sums come back as chunks (the coordinator's
``aggregate_chunk``, each holder's ``share_sum_chunk``) read in step, chunk k of every sum combined and decoded
into place before chunk k + 1 is read. No party builds a whole share.

The coordinator could hand some clients a sum of its own making (the true one plus an offset: a dead model for
the non-victims, trap weights), which nobody but the client would see; so each client then tells every share
holder the digest of what the coordinator sent it (``sum_digest``), and a holder sums no further round unless
every client saw the same (:func:`hebench.protections.sharing.holder.check_same_sums`).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import numpy as np

from hebench.errors import PartyError
from hebench.fl.link import DirectLink, Link, Opened, direct_link
from hebench.fl.meter import PhaseMeter
from hebench.fl.party import PartyContext, Wiring, client_party
from hebench.fl.ring_stream import spans
from hebench.net.messages import MessageKind
from hebench.net.transport import Channel, Message, connect
from hebench.protections.sharing.params import SecretSharingParams
from hebench.protections.sharing.ring_shares import check_range, combine, decode, encode, split


class ShareLink(DirectLink):
    """Aggregator 0 (the coordinator) on ``channel``; aggregators 1..K-1 on ``holders``."""

    def __init__(
        self, base: DirectLink, holders: list[Channel], params: SecretSharingParams, rounds: int | None = None
    ) -> None:
        super().__init__(base.channel, base.cipher, base.chunk_values)
        self.holders, self.params = holders, params
        self.rounds = rounds  # the run's rounds: after the last, no holder reads a digest
        self.rng = np.random.default_rng()  # stochastic rounding only; shares come from the OS's CSPRNG

    def upload(
        self, meta: dict[str, Any], encrypted: list[np.ndarray], plain: np.ndarray | None, meter: PhaseMeter
    ) -> None:
        vector = np.concatenate(encrypted) if encrypted else np.empty(0, np.float32)
        n, samples, head = len(vector), int(meta["samples"]), {"round": meta["round"]}
        with meter.phase("share"):  # refused before any share leaves: a value beyond clip cannot be encoded
            for start, stop in spans(n, self.chunk_values):
                check_range(vector[start:stop], self.params)
        for start, stop in spans(n, self.chunk_values):
            with meter.phase("share"):
                shares = split(encode(vector[start:stop], samples, self.params, self.rng), 1 + len(self.holders))
            with meter.phase("send"):
                for channel, share in zip([self.channel, *self.holders], shares, strict=True):
                    channel.send(
                        Message(MessageKind.SHARE_CHUNK, {**head, "offset": start, "values": n}, (share.tobytes(),))
                    )
            del shares
        with meter.phase("send"):
            self.channel.send(Message(MessageKind.UPDATE, {**meta, "plain_parts": 0, "values": n}))
            for holder in self.holders:
                holder.send(Message(MessageKind.SHARE, {**head, "values": n}))

    def leave(self, round_index: int, phase: str) -> None:
        """Tell every aggregator (a client that stops answering is not yet survived: hebench.faults)."""
        super().leave(round_index, phase)
        for holder in self.holders:
            holder.send(Message(MessageKind.LEAVE, {"round": round_index, "phase": phase}))

    def open(self, msg: Message, epoch: int, meter: PhaseMeter) -> Opened:
        """The FedAvg rebuilt chunk by chunk: chunk k of the coordinator's sum and of every holder's, combined; then
        the digest of the coordinator's sum to every holder."""
        digest = CoordinatorDigest()
        opened = self._open(msg, meter, digest)
        if self.rounds is None or digest.round is None or digest.round < self.rounds - 1:  # a round follows
            with meter.phase("send"):
                for holder in self.holders:
                    meta = {"round": digest.round, "digest": digest.hexdigest()}
                    holder.send(Message(MessageKind.SUM_DIGEST, meta))
        return opened

    def _open(self, msg: Message, meter: PhaseMeter, digest: CoordinatorDigest) -> Opened:
        vector: np.ndarray | None = None
        while msg.kind in self.chunk_kinds:
            digest.add(msg)
            offset, values = int(msg.meta["offset"]), int(msg.meta["values"])
            with meter.phase("receive_sums"):
                sums = [msg.parts[0], *(self._holder_chunk(h, offset, values) for h in self.holders)]
            with meter.phase("reconstruct"):
                total = combine([np.frombuffer(s, dtype=np.uint64) for s in sums])
                if vector is None:
                    vector = np.empty(values, np.float32)
                if len(vector) != values or not 0 <= offset <= values - len(total):
                    raise PartyError(f"a sum chunk at {offset} does not fit {values} values", "same hebench?")
                vector[offset : offset + len(total)] = decode(total, int(msg.meta["samples_total"]), self.params)
            del sums, total
            with meter.phase("wait"):
                msg = self.channel.recv()
        if msg.kind != MessageKind.AGGREGATE:
            raise PartyError(f"expected 'aggregate' from {self.channel.peer}, got '{msg.kind}'", "same hebench?")
        digest.add(msg)
        ends = []
        for h in self.holders:  # the holders' end messages (after their chunks, if a skipped round had any)
            while (end := h.recv()).kind != MessageKind.SHARE_SUM:
                pass
            ends.append(end)
        if msg.meta.get("skipped"):  # nobody (or too few) arrived: no aggregate
            return Opened(np.empty(0, np.float32), np.empty(0, np.float32), {}, skipped=True)
        mismatch = _mismatch(msg, [(h.peer, end) for h, end in zip(self.holders, ends, strict=True)])
        if mismatch is not None:  # a client lost between its shares: the sums hold different clients
            return Opened(np.empty(0, np.float32), np.empty(0, np.float32), {}, skipped=True, failed=mismatch)
        found = np.empty(0, np.float32) if vector is None else vector
        return Opened(found, np.empty(0, np.float32), msg.meta["weights"])

    def _holder_chunk(self, holder: Channel, offset: int, values: int) -> bytes:
        got = holder.recv(MessageKind.SHARE_SUM_CHUNK)
        if (int(got.meta["offset"]), int(got.meta["values"])) != (offset, values):
            raise PartyError(
                f"{holder.peer} sent its sum's chunk at {got.meta['offset']}, the coordinator its at {offset}",
                "protocol mismatch: same hebench on every party?",
            )
        return got.parts[0]

    def traffic(self) -> tuple[int, int]:
        channels = [self.channel, *self.holders]
        return sum(c.bytes_sent for c in channels), sum(c.bytes_received for c in channels)

    def close(self) -> None:
        for holder in self.holders:
            holder.close()
        super().close()


class CoordinatorDigest:
    """SHA-256 over what the coordinator sent this client of a round's aggregate: every chunk (its place and the
    sample total it is decoded with, its bytes) and the end message's fields that shape the FedAvg."""

    FIELDS = ("round", "samples_total", "weights", "summed", "skipped", "weight_total")

    def __init__(self) -> None:
        self._hash = hashlib.sha256()
        self.round: int | None = None

    def add(self, msg: Message) -> None:
        fields = {k: msg.meta.get(k) for k in ("offset", "values", *self.FIELDS)}
        if self.round is None and msg.meta.get("round") is not None:
            self.round = int(msg.meta["round"])
        self._hash.update(json.dumps([msg.kind, fields], sort_keys=True).encode())
        for part in msg.parts:
            self._hash.update(len(part).to_bytes(8, "big") + part)

    def hexdigest(self) -> str:
        return self._hash.hexdigest()


def _mismatch(coordinator: Message, holders: list[tuple[str, Message]]) -> str | None:
    """Why the aggregators' sums cannot be combined (they hold different clients' shares), or None."""
    for peer, end in holders:
        if end.meta.get("spoiled_by") is not None:
            return (
                f"secret-sharing: {peer}'s sum holds part of client {end.meta['spoiled_by']}'s share (lost "
                "mid-stream): the round has no FedAvg"
            )
        ours, theirs = coordinator.meta.get("summed"), end.meta.get("summed")
        if ours is not None and theirs is not None and ours != theirs:
            return (
                f"secret-sharing: {peer}'s sum holds clients {theirs}, the coordinator's {ours} (a client was lost "
                "between its shares): the round has no FedAvg"
            )
    return None


def share_link(ctx: PartyContext, wiring: Wiring, samples: int, meter: PhaseMeter) -> Link:
    params = ctx.config.mode_params
    assert isinstance(params, SecretSharingParams)
    if len(wiring.helpers) != params.extra_aggregators:
        raise PartyError(
            f"secret-sharing needs {params.extra_aggregators} share holders beside the coordinator, "
            f"the runtime wired {len(wiring.helpers)}",
            "run it on the local runtime (hebench run without --engine flower)",
        )
    base = direct_link(ctx, wiring, samples, meter)
    assert isinstance(base, DirectLink)
    holders = []
    with meter.phase("connect"):
        party = client_party(ctx.client_index)
        tls = ctx.tls_for(party)  # transport: tls covers the shares too
        for k, address in enumerate(wiring.helpers, start=1):
            ch = connect(
                address,
                ctx.credentials.key(f"aggregator-{k}"),  # this client's own key at holder k's door
                f"aggregator {k}",
                ctx.timeout_s,
                tls=tls,
                server=f"aggregator-{k}",
                retry_s=ctx.suite.measure.setup_timeout_s,
                party=party,
            )
            ch.send(Message(MessageKind.HELLO, {"role": "client", "client": ctx.client_index}))
            holders.append(ch)
    return ShareLink(base, holders, params, ctx.suite.training.rounds)
