"""Updates and aggregates as streams of chunks: no party builds a whole encrypted update in memory.

Upload (a client, or its engine, to the aggregator)::

    update_chunk {round}                    one ciphertext chunk (hebench.fl.chunks), in order
    plain_part   {round}                    one plaintext chunk (selective encryption), in order
    update_end   {round, epoch, samples}

Aggregate (the aggregator to each client or engine; ``end`` is ``aggregate`` or ``map_sum``)::

    aggregate_chunk {round, epoch, offset, values}   the sum of chunk k: ``offset`` into the encrypted part,
                    (secret sharing: also samples_total, so each chunk decodes on arrival)
    aggregate_plain {round, epoch, offset, values}   whose length is ``values``; plaintext sums likewise
    <end>           {round, epoch, weights, ..., streamed: true}

An engine hands a decrypted aggregate to its host as ``result_chunk`` / ``result_plain`` (float32 or
plain blobs) then ``result`` / ``map_result``. The aggregator reads the round's uploads in lockstep, one
message from each client in client order, so chunk k is always summed in client order (the same sum on
every runtime, bit for bit) while every client encrypts ahead as far as its socket buffers allow. A
frame holds one chunk: ``HEBENCH_MAX_FRAME_BYTES`` bounds a chunk, not an update.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from hebench.errors import PartyError, PeerClosedError
from hebench.fl.meter import PhaseMeter
from hebench.fl.running_sum import RunningSum, SumStream
from hebench.net.messages import MessageKind
from hebench.net.transport import Channel, Message
from hebench.protections.selective.split import PLAIN, parts_of

UPLOAD_KINDS = (MessageKind.UPDATE_CHUNK, MessageKind.PLAIN_PART)
AGGREGATE_CHUNKS = (MessageKind.AGGREGATE_CHUNK, MessageKind.AGGREGATE_PLAIN)
RESULT_CHUNKS = (MessageKind.RESULT_CHUNK, MessageKind.RESULT_PLAIN)


def receive_uploads(
    channels: dict[int, Channel],
    total: RunningSum,
    meter: PhaseMeter,
    on_end: Callable[[int, dict[str, Any]], None] | None = None,
    on_lost: Callable[[int], None] | None = None,
) -> dict[int, str]:
    """Every client's upload added to ``total`` as it arrives; ``on_end(client, meta)`` checks each end message.

    A client may also send its whole update as one ``update`` message (older peers, secret sharing), or
    ``leave`` {round, phase} instead of an update (it dropped out or is late: :mod:`hebench.faults`). With
    ``on_lost``, a client whose connection closed is a dropout too (phase ``lost``; ``on_lost(client)`` is told).
    Returns the clients that left, with the phase each left at.
    """
    pending, left = list(channels), {}
    while pending:
        for i in list(pending):
            try:
                with meter.phase("receive"):
                    msg = channels[i].recv()
            except PeerClosedError:
                if on_lost is None:
                    raise
                on_lost(i)
                total.drop(i)
                left[i] = "lost" if total.spoiled_by != i else "lost_mid_upload"
                pending.remove(i)
                continue
            if msg.kind == MessageKind.LEAVE:
                total.drop(i)
                left[i] = str(msg.meta.get("phase", "unknown"))
                pending.remove(i)
                continue
            if msg.kind in UPLOAD_KINDS:
                with meter.phase("aggregate"):
                    total.add_chunk(i, msg.parts[0], plain=msg.kind == MessageKind.PLAIN_PART)
                continue
            if msg.kind not in (MessageKind.UPDATE_END, MessageKind.UPDATE):
                raise PartyError(
                    f"expected an update from {channels[i].peer}, got '{msg.kind}'", "protocol mismatch: same hebench?"
                )
            if on_end is not None:
                on_end(i, msg.meta)
            with meter.phase("aggregate"):
                if msg.kind == MessageKind.UPDATE:
                    total.add(i, (msg.meta, msg.parts))
                else:
                    total.finish(i)
            pending.remove(i)
    return left


def send_aggregate(
    channels: list[Channel],
    total: SumStream,
    end: str,
    meta: dict[str, Any],
    meter: PhaseMeter,
    on_lost: Callable[[Channel], None] | None = None,
) -> tuple[int, int]:
    """The sum to every channel chunk by chunk, then the ``end`` message: (bytes of one copy, plaintext chunks).

    With ``on_lost``, a channel whose peer closed is told to it and left out of the rest of the stream."""
    channels = list(channels)

    def send_all(msg: Message) -> None:
        for ch in list(channels):
            try:
                ch.send(msg)
            except PeerClosedError:
                if on_lost is None:
                    raise
                on_lost(ch)
                channels.remove(ch)

    sent, plain = 0, 0
    head = {k: meta[k] for k in ("round", "epoch", "samples_total") if k in meta}  # samples_total: secret sharing
    chunks = total.stream()
    while True:
        with meter.phase("aggregate"):  # serialising a chunk of the sum
            chunk = next(chunks, None)
        if chunk is None:
            break
        kind = AGGREGATE_CHUNKS[chunk.plain]
        msg = Message(kind, {**head, "offset": chunk.offset, "values": chunk.total}, (chunk.blob,))
        with meter.phase("send"):
            send_all(msg)
        sent, plain = sent + len(chunk.blob), plain + chunk.plain
        del chunk, msg
    with meter.phase("send"):
        send_all(Message(end, {**meta, "plain_parts": 0, "streamed": True}))
    return sent, plain


def whole_updates(messages: list[Message]) -> list[Message]:
    """The uploads among a party's received messages (a transcript), each streamed one joined into a single
    ``update`` message: its end message's fields, ``plain_parts``, and every chunk in order (security scans)."""
    found: list[Message] = []
    cipher: list[bytes] = []
    plain: list[bytes] = []
    share: list[bytes] = []
    for msg in messages:
        if msg.kind == MessageKind.UPDATE and share:  # the end of a streamed share
            found.append(Message(MessageKind.UPDATE, {**msg.meta, "plain_parts": 0}, (b"".join(share),)))
            share = []
        elif msg.kind == MessageKind.UPDATE:
            found.append(msg)
        elif msg.kind in UPLOAD_KINDS:
            (cipher if msg.kind == MessageKind.UPDATE_CHUNK else plain).extend(msg.parts)
        elif msg.kind == MessageKind.SHARE_CHUNK:  # secret sharing's first share, chunk by chunk: joined into one part
            share.extend(msg.parts)
        elif msg.kind == MessageKind.UPDATE_END:
            found.append(Message(MessageKind.UPDATE, {**msg.meta, "plain_parts": len(plain)}, (*cipher, *plain)))
            cipher, plain = [], []
    return found


class VectorWriter:
    """A part of an aggregate filled chunk by chunk at the offsets its chunks name (float32)."""

    def __init__(self) -> None:
        self.vector: np.ndarray | None = None
        self.filled = 0

    def write(self, meta: dict[str, Any], values: np.ndarray) -> None:
        offset, total = int(meta["offset"]), int(meta["values"])
        if self.vector is None:
            self.vector = np.empty(total, dtype=np.float32)
        if len(self.vector) != total or not 0 <= offset <= total - len(values):
            raise PartyError(
                f"an aggregate chunk of {len(values)} values at {offset} does not fit a part of {total}",
                "protocol mismatch: same hebench on every party?",
            )
        self.vector[offset : offset + len(values)] = values
        self.filled += len(values)

    def result(self) -> np.ndarray:
        if self.vector is None:
            return np.empty(0, np.float32)
        if self.filled != len(self.vector):
            raise PartyError(
                f"an aggregate arrived with {self.filled} of its {len(self.vector)} values",
                "protocol mismatch: same hebench on every party?",
            )
        return self.vector


def read_aggregate(
    channel: Channel,
    first: Message,
    end: str,
    chunk_kinds: tuple[str, str],
    decrypt: Callable[[bytes], np.ndarray],
    meter: PhaseMeter,
) -> tuple[np.ndarray, np.ndarray, Message]:
    """(encrypted part, plaintext part, the end message) of an aggregate whose first message is ``first``.

    ``chunk_kinds``: the (ciphertext, plaintext) chunk kinds; ``decrypt`` turns a ciphertext chunk into values.
    An ``end`` message that carries the blobs itself (secagg's and secret sharing's aggregates) is read whole.
    """
    cipher, plain = VectorWriter(), VectorWriter()
    msg = first
    while msg.kind in chunk_kinds:
        if msg.kind == chunk_kinds[0]:
            cipher.write(msg.meta, decrypt(msg.parts[0]))
        else:
            with meter.phase("deserialize"):
                plain.write(msg.meta, PLAIN.decrypt(PLAIN.deserialize(msg.parts[0])))
        with meter.phase("wait"):
            msg = channel.recv()
    if msg.kind != end:
        raise PartyError(f"expected '{end}' from {channel.peer}, got '{msg.kind}'", "protocol mismatch: same hebench?")
    if msg.parts:
        blobs, clear = parts_of(msg.parts, int(msg.meta.get("plain_parts", 0)))
        parts = [decrypt(b) for b in blobs]
        with meter.phase("deserialize"):
            opened = [PLAIN.decrypt(PLAIN.deserialize(b)) for b in clear]
        return (
            np.concatenate(parts).astype(np.float32) if parts else np.empty(0, np.float32),
            np.concatenate(opened).astype(np.float32) if opened else np.empty(0, np.float32),
            msg,
        )
    return cipher.result(), plain.result(), msg
