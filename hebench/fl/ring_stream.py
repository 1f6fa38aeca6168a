"""Ring-element vectors (secagg's masked updates, secret sharing's shares) streamed chunk by chunk.

A sender cuts its vector into consecutive chunks of at most ``chunk_values`` values and sends each as
``<chunk kind> {offset, values}`` (``values``: the whole vector's length), then an end message. A receiver
reads every sender's stream in lockstep (one message from each in turn, in sender order) and adds each
chunk into a :class:`RingTotal` at its offset, then drops it: it holds the running sum (one vector in the
ring's wire width) and one chunk, whatever the number of senders. A frame holds one chunk, so
``HEBENCH_MAX_FRAME_BYTES`` bounds a chunk, not an update. Addition in the ring is exact and commutative:
the streamed sum equals the whole-vector sum bit for bit, however the vectors were cut.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np

from hebench.errors import PartyError
from hebench.fl.meter import PhaseMeter
from hebench.fl.running_sum import SumChunk
from hebench.net.messages import MessageKind
from hebench.net.transport import Channel, Message


def spans(length: int, chunk_values: int) -> Iterator[tuple[int, int]]:
    """(start, stop) of each chunk of a vector of ``length`` values."""
    step = max(1, chunk_values)
    for start in range(0, length, step):
        yield start, min(length, start + step)


class RingTotal:
    """The running sum of ring vectors modulo ``modulus`` (None: 2^64), filled chunk by chunk, held in the ring's
    wire width: uint32 for a modulus up to 2^32 (Flower's default; 4 bytes a value, no more than one masked
    update), uint64 above. At 2^32 and 2^64 the sum wraps by itself; below, each chunk is added in uint64 (a chunk's
    worth of scratch, never the whole vector) and reduced before it is stored, so nothing overflows."""

    def __init__(self, modulus: int | None = None) -> None:
        self.modulus = modulus
        self.dtype: type[np.unsignedinteger] = np.uint32 if modulus is not None and modulus <= 2**32 else np.uint64
        self.values: np.ndarray | None = None

    def add(self, offset: int, length: int, chunk: np.ndarray) -> None:
        if self.values is None:
            self.values = np.zeros(length, dtype=self.dtype)
        if len(self.values) != length or not 0 <= offset <= length - len(chunk):
            raise PartyError(
                f"a chunk of {len(chunk)} values at {offset} does not fit a vector of {len(self.values)}",
                "protocol mismatch: same hebench on every party?",
            )
        part = self.values[offset : offset + len(chunk)]
        if self.modulus is None or self.modulus == 2 ** (8 * self.values.itemsize):
            part += chunk.astype(self.dtype, copy=False)  # wraps modulo 2^32 or 2^64 by itself
            return
        wide = chunk.astype(np.uint64) % np.uint64(self.modulus)  # this chunk only: below modulus <= 2^62
        wide += part  # both below modulus: the sum is below 2^63, no wrap
        wide %= np.uint64(self.modulus)
        part[:] = wide

    def __len__(self) -> int:
        return 0 if self.values is None else len(self.values)


@dataclass
class Received:
    """What :func:`receive_streams` read: each sender's end message, bytes and the senders that left."""

    ends: dict[int, Message] = field(default_factory=dict)
    sizes: dict[int, int] = field(default_factory=dict)  # bytes of each sender's chunks
    left: dict[int, str] = field(default_factory=dict)  # senders that said ``leave`` (their phase) or were lost
    spoiled_by: int | None = None  # a sender lost after some of its chunks were summed: the sum is not its survivors'


def receive_streams(
    channels: dict[int, Channel],
    chunk_kind: str,
    end_kind: str,
    total: RingTotal,
    decode: Callable[[bytes], np.ndarray],
    meter: PhaseMeter,
    tolerate_loss: bool = False,
    phases: tuple[str, str] = ("receive", "aggregate"),
) -> Received:
    """Every sender's stream added into ``total`` as it arrives (``decode`` turns a chunk's bytes into ring values).

    A sender may send ``leave`` {phase} instead (it dropped out: :mod:`hebench.faults`); with ``tolerate_loss`` a
    closed connection is a dropout too (phase ``lost``), and one closed mid-stream spoils the sum. ``phases``:
    the meter's phases for waiting on a message and for adding a chunk."""
    got = Received()
    pending = list(channels)
    while pending:
        for i in list(pending):
            try:
                with meter.phase(phases[0]):
                    msg = channels[i].recv()
            except PartyError:
                if not tolerate_loss:
                    raise
                got.left[i] = "lost"
                if i in got.sizes and got.spoiled_by is None:
                    got.spoiled_by = i
                pending.remove(i)
                continue
            if msg.kind == chunk_kind:
                with meter.phase(phases[1]):
                    total.add(int(msg.meta["offset"]), int(msg.meta["values"]), decode(msg.parts[0]))
                got.sizes[i] = got.sizes.get(i, 0) + len(msg.parts[0])
                continue
            if msg.kind == MessageKind.LEAVE and i not in got.sizes:
                got.left[i] = str(msg.meta.get("phase", "unknown"))
            elif msg.kind == end_kind:
                got.ends[i] = msg
                got.sizes.setdefault(i, 0)
            else:
                raise PartyError(
                    f"expected '{chunk_kind}' or '{end_kind}' from {channels[i].peer}, got '{msg.kind}'",
                    "protocol mismatch: same hebench on every party?",
                )
            pending.remove(i)
    return got


def send_stream(
    channel: Channel, vector: np.ndarray, chunk_kind: str, head: dict, chunk_values: int, wire: type | None = None
) -> int:
    """``vector`` as chunks on ``channel`` (each cast to ``wire``, if given); returns the bytes of its chunks."""
    sent = 0
    for start, stop in spans(len(vector), chunk_values):
        chunk = vector[start:stop]
        blob = (chunk if wire is None else chunk.astype(wire)).tobytes()
        channel.send(Message(chunk_kind, {**head, "offset": start, "values": len(vector)}, (blob,)))
        sent += len(blob)
    return sent


class StreamedAggregate:
    """An aggregate handed out chunk by chunk (what :func:`hebench.fl.streams.send_aggregate` streams): each
    chunk's blob made by ``blob(start, stop)`` only when it is sent."""

    spoiled_by: int | None = None  # never: a spoiled round is failed before its aggregate is built

    def __init__(self, length: int, chunk_values: int, blob: Callable[[int, int], bytes]) -> None:
        self.length, self.chunk_values, self.blob = length, chunk_values, blob

    def stream(self) -> Iterator[SumChunk]:
        for start, stop in spans(self.length, self.chunk_values):
            yield SumChunk(False, start, stop - start, self.length, self.blob(start, stop))
