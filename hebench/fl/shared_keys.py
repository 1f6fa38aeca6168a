"""Key sets loaded once per process and shared by the clients a pool worker hosts as threads.

In host-he every client of an epoch receives the same secret key set. A pool
worker hosting a hundred clients would otherwise hold a hundred copies of the
loaded library context (about 10 MB each for TenSEAL CKKS at N=8192): each
client still receives the key bytes over its own connection, but the first to
load them is charged the load and the others use the same loaded set. Calls
on a shared set take its lock, since some HE libraries release the GIL.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from typing import Any

from hebench.crypto import HEAdapter, load_adapter

KEEP = 3  # loaded sets kept for new arrivals (clients of one pool are at most an epoch apart)


class SharedAdapter:
    """An adapter used by several client threads: each call holds the adapter's lock."""

    def __init__(self, adapter: HEAdapter) -> None:
        self._adapter, self._lock = adapter, threading.Lock()

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._adapter, name)
        if not callable(value):
            return value

        def locked(*args: Any, **kwargs: Any) -> Any:
            with self._lock:
                return value(*args, **kwargs)

        return locked


class SharedKeys:
    """Loaded key sets by the digest of their bytes."""

    def __init__(self, load: Callable[[bytes], HEAdapter] = load_adapter) -> None:
        self._load = load
        self._loaded: dict[bytes, SharedAdapter] = {}
        self._lock = threading.Lock()

    def load(self, blob: bytes) -> HEAdapter:
        digest = hashlib.blake2b(blob, digest_size=32).digest()
        with self._lock:
            if digest not in self._loaded:
                self._loaded[digest] = SharedAdapter(self._load(blob))
                for old in list(self._loaded)[:-KEEP]:
                    del self._loaded[old]  # clients still holding it keep their reference
            return self._loaded[digest]  # type: ignore[return-value]


SHARED_KEYS = SharedKeys()
