"""Who encrypts a client's update: an interface shared by every runtime.

A cipher turns the update's pieces into wire blobs and an aggregate's blobs
back into a vector, charging the client's phases to its :class:`PhaseMeter`.
The key-holder variant holds the epoch's secret key set itself (host-he; raw
with the plain adapter); the engine variant (:mod:`hebench.protections.offload.cipher`)
asks a separate engine and never sees a key.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from hebench.crypto import HEAdapter
from hebench.crypto.exact_weights import PreWeight
from hebench.errors import PartyError
from hebench.fl.chunks import chunks_of, values_per_chunk
from hebench.fl.meter import PhaseMeter
from hebench.protections.selective.split import PLAIN


class Cipher(ABC):
    """Encrypts and decrypts for one client; ``engine_reports`` holds an engine's own measurements, if any.

    Whole updates (``encrypt``/``decrypt``: Flower's client mod) or streamed chunks (``encrypt_stream``,
    ``decrypt_chunk``: the local runtime), one encrypted vector per chunk.
    """

    def __init__(self) -> None:
        self.engine_reports: list[dict[str, Any]] = []
        self.engine_bytes = 0

    @abstractmethod
    def encrypt(self, pieces: list[np.ndarray], epoch: int, meter: PhaseMeter) -> tuple[bytes, ...]: ...

    @abstractmethod
    def decrypt(self, blobs: tuple[bytes, ...], epoch: int, meter: PhaseMeter) -> np.ndarray: ...

    def encrypt_stream(
        self, pieces: list[np.ndarray], epoch: int, meter: PhaseMeter, chunk_values: int, pre: PreWeight | None = None
    ) -> Iterator[bytes]:
        """The update's chunks (:mod:`hebench.fl.chunks`), each encrypted and serialised as it is asked for."""
        if pre is not None:
            raise PartyError("this cipher cannot apply a FedAvg weight before encryption", "protocol mismatch")
        for chunk in chunks_of(pieces, chunk_values):
            yield from self.encrypt([chunk], epoch, meter)

    def decrypt_chunk(self, blob: bytes, epoch: int, meter: PhaseMeter) -> np.ndarray:
        """One chunk of an aggregate, decrypted."""
        return self.decrypt((blob,), epoch, meter)

    def close(self) -> None:  # noqa: B027 - optional
        """Release connections."""


class KeyHolderCipher(Cipher):
    """The client process holds the epoch's key set, from ``keys(epoch)`` (fetched once per epoch)."""

    def __init__(
        self, keys: Callable[[int], HEAdapter], require_secret: bool, on_close: Callable[[], None] | None = None
    ) -> None:
        super().__init__()
        self._fetch, self.require_secret, self._on_close = keys, require_secret, on_close
        self._adapters: dict[int, HEAdapter] = {}

    def adapter(self, epoch: int, meter: PhaseMeter) -> HEAdapter:
        if epoch not in self._adapters:
            with meter.phase("keys"):
                adapter = self._fetch(epoch)
            if self.require_secret and not adapter.has_secret_key:
                raise PartyError(
                    "this client holds the keys in its mode but received no secret key",
                    "the key authority must send key holders the secret set",
                )
            self._adapters = {e: a for e, a in self._adapters.items() if e >= epoch - 1}
            self._adapters[epoch] = adapter
        return self._adapters[epoch]

    def encrypt(self, pieces: list[np.ndarray], epoch: int, meter: PhaseMeter) -> tuple[bytes, ...]:
        adapter = self.adapter(epoch, meter)
        with meter.phase("encrypt"):
            encs = [adapter.encrypt(p) for p in pieces if len(p)]
        with meter.phase("serialize"):
            return tuple(adapter.serialize(e) for e in encs)

    def encrypt_stream(
        self, pieces: list[np.ndarray], epoch: int, meter: PhaseMeter, chunk_values: int, pre: PreWeight | None = None
    ) -> Iterator[bytes]:
        adapter = self.adapter(epoch, meter)
        for chunk in chunks_of(pieces, values_per_chunk(adapter, chunk_values)):
            with meter.phase("encrypt"):
                enc = adapter.encrypt(chunk, pre)
            with meter.phase("serialize"):
                blob = adapter.serialize(enc)
            del enc
            yield blob

    def decrypt_chunk(self, blob: bytes, epoch: int, meter: PhaseMeter) -> np.ndarray:
        adapter = self.adapter(epoch, meter)
        with meter.phase("deserialize"):
            enc = adapter.deserialize(blob)
        with meter.phase("decrypt"):
            return adapter.decrypt(enc)

    def decrypt(self, blobs: tuple[bytes, ...], epoch: int, meter: PhaseMeter) -> np.ndarray:
        adapter = self.adapter(epoch, meter)
        with meter.phase("deserialize"):
            encs = [adapter.deserialize(b) for b in blobs]
        with meter.phase("decrypt"):
            parts = [adapter.decrypt(e) for e in encs]
        return np.concatenate(parts) if parts else np.empty(0, np.float32)

    def close(self) -> None:
        if self._on_close is not None:
            self._on_close()


def plain_cipher(*_: Any) -> Cipher:
    """raw: real plaintext arithmetic (float32 on the wire), no keys."""
    return KeyHolderCipher(lambda epoch: PLAIN, require_secret=False)
