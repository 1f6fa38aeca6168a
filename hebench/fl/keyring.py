"""Key sets by epoch, as a key holder (host-he client or offload engine) receives them."""

from __future__ import annotations

import threading
from collections.abc import Callable

from hebench.crypto import HEAdapter, load_adapter
from hebench.errors import PartyError
from hebench.net.messages import MessageKind
from hebench.net.transport import Channel

KEEP_EPOCHS = 2


def epoch_of(round_index: int, rotation: int | None) -> int:
    return 0 if rotation is None else round_index // rotation


class KeyRing:
    """Adapters by key epoch.

    With a ``source`` channel, :meth:`get` reads pushed key sets from it until
    the epoch arrives (single-threaded holders); otherwise another thread calls
    :meth:`add` and :meth:`get` waits for it.
    """

    def __init__(
        self, source: Channel | None = None, timeout_s: float = 900.0, load: Callable[[bytes], HEAdapter] = load_adapter
    ) -> None:
        self.source = source
        self.timeout_s = timeout_s
        self._load = load  # a pool's clients share loaded sets (hebench.fl.shared_keys)
        self._keys: dict[int, HEAdapter] = {}
        self._cond = threading.Condition()

    def add(self, epoch: int, blob: bytes) -> None:
        adapter = self._load(blob)
        with self._cond:
            self._keys[epoch] = adapter
            for old in sorted(self._keys)[:-KEEP_EPOCHS]:
                del self._keys[old]
            self._cond.notify_all()

    def get(self, epoch: int) -> HEAdapter:
        if self.source is not None:
            while epoch not in self._keys:
                msg = self.source.recv(MessageKind.KEYS)
                self.add(int(msg.meta["epoch"]), msg.parts[0])
            return self._keys[epoch]
        with self._cond:
            if not self._cond.wait_for(lambda: epoch in self._keys, self.timeout_s):
                raise PartyError(
                    f"no key set for epoch {epoch} arrived from the key authority", "is the key authority up?"
                )
            return self._keys[epoch]
