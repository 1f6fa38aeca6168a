"""FedAvg as updates arrive: a running weighted sum, chunk by chunk, holding the total and one chunk in flight.

The weights (sample counts, known before the round: clients state them when they connect) are fixed up
front, so each chunk of an update is weighted and added the moment it arrives, then dropped: the
aggregator holds the sum (serialised chunk by chunk as each is complete) and a chunk, whatever the number
of clients. Finished chunks stay in memory up to ``held_bytes`` (``runtime.aggregate_memory_mb``); the
rest wait in an anonymous temporary file until they are sent (:class:`FinishedChunks`), so the aggregator's
memory is bounded whatever the model's size: a sum of ciphertexts cannot keep a fresh upload's seeded
form, so the aggregate is up to twice an upload's bytes (compact HE).
Chunk k of every client covers the same coordinates (:mod:`hebench.fl.chunks`). The ciphertext chunks
are summed with the public keys; the plaintext chunks (selective encryption) with the plain adapter.
Ciphertext chunks may have their own multipliers: clients that applied their FedAvg weight before
encryption (:class:`~hebench.crypto.exact_weights.PreWeight`) are added with weight 1.

:meth:`stream` hands the sum out chunk by chunk, serialising each and releasing it; :meth:`blobs`
serialises it whole (Flower's strategy).
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from hebench.crypto.base import EncryptedVector, HEAdapter
from hebench.errors import PartyError
from hebench.protections.selective.split import PLAIN, parts_of

Update = tuple[dict[str, Any], tuple[bytes, ...]]
HELD_BYTES = 256 * 2**20  # finished chunk sums kept in memory; beyond them, in a temporary file


class FinishedChunks:
    """Serialised chunk sums: in memory up to ``held_bytes``, the rest appended to an anonymous temporary file
    (deleted when closed, and by the OS if the process dies); each read back once, when it is sent."""

    def __init__(self, held_bytes: int = HELD_BYTES) -> None:
        self.held_bytes, self.in_memory, self.spilled = held_bytes, 0, 0
        self._file: Any = None

    def keep(self, blob: bytes) -> bytes | tuple[int, int]:
        """``blob`` itself, or where it was written: (offset, length)."""
        if self.in_memory + len(blob) <= self.held_bytes:
            self.in_memory += len(blob)
            return blob
        if self._file is None:
            self._file = tempfile.TemporaryFile(prefix="hebench-aggregate-")
        offset = self._file.seek(0, 2)
        self._file.write(blob)
        self.spilled += len(blob)
        return offset, len(blob)

    def load(self, kept: bytes | tuple[int, int]) -> bytes:
        if isinstance(kept, bytes):
            return kept
        offset, length = kept
        self._file.seek(offset)
        return self._file.read(length)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


@dataclass(frozen=True)
class SumChunk:
    """One serialised chunk of the aggregate: ``values`` coordinates from ``offset`` of its part."""

    plain: bool  # the plaintext part (selective) rather than the ciphertext part
    offset: int
    length: int
    total: int  # the part's length
    blob: bytes


class SumStream(Protocol):
    """An aggregate that :func:`hebench.fl.streams.send_aggregate` streams out chunk by chunk."""

    spoiled_by: int | None  # a client lost mid-upload spoiled the sum (the round is skipped)

    def stream(self) -> Iterator[SumChunk]: ...


class _Part:
    """The running sum of one part (ciphertext or plaintext): one weighted sum per chunk index.

    A chunk's sum is serialised as soon as every client has added to it (in lockstep, right after the last
    one's chunk k): the aggregator then holds finished chunks as bytes (SEAL's compressed form; float32 for
    plaintext, whose sums run in float64) and only unfinished ones as ciphertext objects.
    """

    def __init__(self, adapter: HEAdapter, weights: dict[int, float], finished: FinishedChunks) -> None:
        self.adapter, self.weights, self.finished = adapter, weights, finished
        self.expected = len(weights)  # contributions a complete chunk holds (fewer once clients drop out)
        self.discard = False  # the round's sum is spoiled (a client lost mid-upload): chunks are read, not summed
        self.sums: list[EncryptedVector | bytes | tuple[int, int] | None] = []
        self.lengths: list[int] = []
        self.added: list[int] = []  # contributions per chunk index
        self.next: dict[int, int] = {}  # client -> the index of its next chunk

    def add(self, client: int, blob: bytes) -> None:
        k = self.next.get(client, 0)
        if self.discard:
            self.next[client] = k + 1
            return
        vector = self.adapter.deserialize(blob)
        weighted = self.adapter.multiply_plain(vector, self.weights[client])
        del vector
        if k == len(self.sums):  # the first client to reach chunk k
            self.sums.append(weighted)
            self.lengths.append(weighted.length)
            self.added.append(1)
        else:
            current = self.sums[k]
            if not isinstance(current, EncryptedVector):
                raise PartyError(f"client {client} sent chunk {k} after every client had", "same hebench everywhere?")
            self.sums[k] = self.adapter.add(current, weighted)
            self.added[k] += 1
        del weighted
        if self.added[k] == self.expected:  # complete: keep it serialised
            done = self.sums[k]
            assert isinstance(done, EncryptedVector)
            self.sums[k] = self.finished.keep(self.adapter.serialize(done))
        self.next[client] = k + 1

    def count(self, client: int) -> int:
        return self.next.get(client, 0)

    def chunks(self, plain: bool) -> Iterator[SumChunk]:
        total, offset = sum(self.lengths), 0
        for k, length in enumerate(self.lengths):
            done = self.sums[k]
            self.sums[k] = None  # released as it goes
            if done is None:
                raise PartyError("the aggregate was already sent", "protocol bug: same hebench?")
            blob = self.adapter.serialize(done) if isinstance(done, EncryptedVector) else self.finished.load(done)
            yield SumChunk(plain, offset, length, total, blob)
            offset += length


class RunningSum:
    """``add`` each client's update once (whole, or ``add_chunk`` then ``finish``); then ``stream()`` or ``blobs()``.

    ``weights``: each client's FedAvg weight (plaintext parts, and ciphertext parts unless ``cipher_weights``);
    ``held_bytes``: finished chunk sums kept in memory, the rest in a temporary file (:class:`FinishedChunks`).
    """

    def __init__(
        self,
        adapter: HEAdapter,
        weights: dict[int, float],
        cipher_weights: dict[int, float] | None = None,
        held_bytes: int = HELD_BYTES,
    ) -> None:
        self.adapter, self.weights = adapter, weights
        self.finished = FinishedChunks(held_bytes)
        self._cipher = _Part(adapter, cipher_weights if cipher_weights is not None else weights, self.finished)
        self._plain = _Part(PLAIN, weights, self.finished)
        self._counts: tuple[int, int] | None = None  # chunks per update, from the first complete one
        self.added: set[int] = set()
        self.dropped: set[int] = set()  # clients that left before sending a chunk (hebench.faults)
        self.spoiled_by: int | None = None  # a client lost after part of its update was summed: no aggregate
        self.update_bytes: dict[int, int] = {}

    def drop(self, client: int) -> None:
        """``client`` left the round before sending anything: the sum is complete without it. Its weight stays
        out of the sum (the survivors' FedAvg weights total less than 1: :attr:`survivor_weight`).

        A client lost after part of its update was summed spoils the sum (its chunks cannot be taken out without
        holding every client's chunks): :attr:`spoiled_by` names it, the other uploads are still read (not
        summed), and the round has no aggregate.
        """
        self._check_open(client)
        if self._cipher.count(client) or self._plain.count(client):
            self.spoiled_by = client if self.spoiled_by is None else self.spoiled_by
            self._cipher.discard = self._plain.discard = True
            self.finished.close()  # no aggregate this round: what was kept is never sent
        self.dropped.add(client)
        self._cipher.expected -= 1
        self._plain.expected -= 1

    @property
    def survivor_weight(self) -> float:
        """The FedAvg weights of the clients in the sum, added up (1 when nobody dropped out)."""
        return float(sum(w for i, w in self.weights.items() if i not in self.dropped))

    def _check_open(self, client: int) -> None:
        if client not in self.weights or client in self.added or client in self.dropped:
            raise PartyError(f"an unexpected or repeated update from client {client}", "same hebench on every party?")

    def add_chunk(self, client: int, blob: bytes, plain: bool = False) -> None:
        """The next ciphertext (or plaintext) chunk of ``client``'s update."""
        self._check_open(client)
        (self._plain if plain else self._cipher).add(client, blob)
        self.update_bytes[client] = self.update_bytes.get(client, 0) + len(blob)

    def finish(self, client: int) -> None:
        """``client``'s update is complete: it must hold as many chunks as every other one."""
        self._check_open(client)
        counts = (self._cipher.count(client), self._plain.count(client))
        if self._counts is None:
            self._counts = counts
        elif counts != self._counts:
            raise PartyError(
                f"client {client} sent {counts[0]} ciphertext and {counts[1]} plaintext chunks, others "
                f"{self._counts[0]} and {self._counts[1]}",
                "use one packing and one chunk size per run (same hebench and suite on every party)",
            )
        self.added.add(client)
        self.update_bytes.setdefault(client, 0)

    def add(self, client: int, update: Update) -> None:
        """A whole update: its ciphertext blobs (one per chunk) then ``plain_parts`` plaintext blobs."""
        self._check_open(client)
        meta, parts = update
        cipher, plain = parts_of(parts, int(meta.get("plain_parts", 0)))
        for blob in cipher:
            self.add_chunk(client, blob)
        for blob in plain:
            self.add_chunk(client, blob, plain=True)
        self.finish(client)

    def _complete(self) -> None:
        if self.spoiled_by is not None:
            raise PartyError(
                f"client {self.spoiled_by} was lost mid-upload: this round's sum holds part of its update",
                "the round has no aggregate (skipped); protocol bug if it was streamed",
            )
        missing = set(self.weights) - self.added - self.dropped
        if self._counts is None or missing:
            raise PartyError(
                f"no update from client(s) {sorted(missing)}" if missing else "no updates to aggregate",
                "select at least one client per round",
            )

    def stream(self) -> Iterator[SumChunk]:
        """The weighted sum, chunk by chunk (ciphertext part, then plaintext part), each released once handed out."""
        self._complete()
        try:
            yield from self._cipher.chunks(plain=False)
            yield from self._plain.chunks(plain=True)
        finally:
            self.finished.close()

    def blobs(self) -> tuple[tuple[bytes, ...], int]:
        """(ciphertext sums then plaintext sums, serialized; the number of plaintext sums)."""
        chunks = list(self.stream())
        return tuple(c.blob for c in chunks), sum(c.plain for c in chunks)
