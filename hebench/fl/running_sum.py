"""FedAvg as updates arrive: a running weighted sum holding one update and the total, whatever the clients.

The weights (sample counts, known before the round: clients state them when
they connect) are fixed up front, so each update is weighted and added the
moment it arrives and then dropped. The ciphertext parts are summed with the
public keys; any plaintext parts (selective encryption) with the plain adapter.
"""

from __future__ import annotations

from typing import Any

from hebench.crypto.base import EncryptedVector, HEAdapter
from hebench.errors import PartyError
from hebench.selective.split import PLAIN, parts_of

Update = tuple[dict[str, Any], tuple[bytes, ...]]


class RunningSum:
    """``add`` each client's update once; ``blobs()`` is the weighted sum, serialized, and its plaintext count."""

    def __init__(self, adapter: HEAdapter, weights: dict[int, float]) -> None:
        self.adapter, self.weights = adapter, weights
        self._cipher: list[EncryptedVector] | None = None
        self._plain: list[EncryptedVector] | None = None
        self.added: set[int] = set()
        self.update_bytes: dict[int, int] = {}

    def add(self, client: int, update: Update) -> None:
        if client not in self.weights or client in self.added:
            raise PartyError(f"an unexpected or repeated update from client {client}", "same hebench on every party?")
        meta, parts = update
        cipher, plain = parts_of(parts, int(meta.get("plain_parts", 0)))
        weight = self.weights[client]
        self._cipher = self._fold(self.adapter, self._cipher, [self.adapter.deserialize(b) for b in cipher], weight)
        self._plain = self._fold(PLAIN, self._plain, [PLAIN.deserialize(b) for b in plain], weight)
        self.added.add(client)
        self.update_bytes[client] = sum(len(p) for p in parts)

    @staticmethod
    def _fold(
        adapter: HEAdapter, total: list[EncryptedVector] | None, vectors: list[EncryptedVector], weight: float
    ) -> list[EncryptedVector]:
        weighted = [adapter.multiply_plain(v, weight) for v in vectors]
        if total is None:
            return weighted
        if len(total) != len(weighted):
            raise PartyError(f"an update of {len(weighted)} vectors, others {len(total)}", "use one packing per run")
        return [adapter.add(a, b) for a, b in zip(total, weighted, strict=True)]

    def blobs(self) -> tuple[tuple[bytes, ...], int]:
        """(ciphertext sums then plaintext sums, serialized; the number of plaintext sums)."""
        missing = set(self.weights) - self.added
        if self._cipher is None or self._plain is None or missing:
            raise PartyError(
                f"no update from client(s) {sorted(missing)}" if missing else "no updates to aggregate",
                "select at least one client per round",
            )
        encrypted = [self.adapter.serialize(e) for e in self._cipher]
        plain = [PLAIN.serialize(e) for e in self._plain]
        return tuple(encrypted + plain), len(plain)
