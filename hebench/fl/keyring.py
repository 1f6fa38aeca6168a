"""Key sets by epoch, as a key holder (host-he client, offload engine, decryptor-he's parties) receives them.

The key authority pushes an epoch's key set to its holders before it answers the aggregator, and the aggregator
announces the round that needs it only then. A holder must therefore take pushes as they arrive: one that read
its key channel only when a round needed the set left a push larger than the kernel's socket buffers half-sent,
the authority blocked in that send, the aggregator waiting for the authority and the holder for the aggregator;
every HE mode deadlocked over a shallow link (a real WAN stalls the same way). A :class:`KeyFeed` reads a key
channel on a thread of its own.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from hebench.crypto import HEAdapter, load_adapter
from hebench.errors import PartyError
from hebench.net.messages import MessageKind
from hebench.net.transport import Channel, Message

KEEP_EPOCHS = 2
POLL_S = 0.2  # how often a feed looks whether its owner closed it


def epoch_of(round_index: int, rotation: int | None) -> int:
    return 0 if rotation is None else round_index // rotation


class KeyFeed:
    """Reads ``channel`` on a daemon thread, handing each pushed key set to ``take(message)`` as it arrives, until
    the key authority says done (``done`` is then set), hangs up or fails (``error``), or the owner calls
    :meth:`close` (the thread then closes the channel itself: never a read on a socket closed under it)."""

    def __init__(self, channel: Channel, take: Callable[[Message], None], changed: threading.Condition) -> None:
        self.channel, self._take, self._changed = channel, take, changed
        self.done = False
        self.error: PartyError | None = None
        self._closing = threading.Event()
        self._exited = False
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._read, daemon=True, name=f"keys from {channel.peer}")
        self._thread.start()

    @property
    def ended(self) -> bool:
        return self.done or self.error is not None

    def _read(self) -> None:
        try:
            while not self._closing.is_set():
                if not self.channel.conn.poll(POLL_S):
                    continue
                msg = self.channel.recv()
                if msg.kind == MessageKind.DONE:
                    self._end(done=True)
                    return
                if msg.kind != MessageKind.KEYS:
                    raise PartyError(f"expected 'keys' from {self.channel.peer}, got '{msg.kind}'", "same hebench?")
                self._take(msg)
                with self._changed:
                    self._changed.notify_all()
        except PartyError as err:
            self._end(error=err)
        except (OSError, EOFError) as err:  # a read on a channel that closed meanwhile
            self._end(error=PartyError(f"{self.channel.peer} closed the key channel ({err})", "see its error"))
        finally:
            with self._lock:
                self._exited = True
                if self._closing.is_set():
                    self.channel.close()

    def _end(self, done: bool = False, error: PartyError | None = None) -> None:
        with self._changed:
            self.done, self.error = done, error
            self._changed.notify_all()

    def close(self) -> None:
        """Stop reading and close the channel (the feed's thread does, within :data:`POLL_S`, if still reading)."""
        with self._lock:
            self._closing.set()
            if self._exited:
                self.channel.close()


class KeyRing:
    """Key sets by epoch (``load(message)``: what a push holds; by default the adapter of its first part).

    With a ``source`` channel, a :class:`KeyFeed` takes every push as it arrives and :meth:`get` waits for the
    epoch; otherwise another thread calls :meth:`add` (an engine's key-delivery session) and :meth:`get` waits.
    """

    def __init__(
        self,
        source: Channel | None = None,
        timeout_s: float = 900.0,
        load: Callable[[bytes], HEAdapter] = load_adapter,
        unpack: Callable[[Message], Any] | None = None,
    ) -> None:
        self.timeout_s = timeout_s
        self._load = load  # a pool's clients share loaded sets (hebench.fl.shared_keys)
        self._unpack = unpack or (lambda msg: self._load(msg.parts[0]))
        self._keys: dict[int, Any] = {}
        self._cond = threading.Condition()
        self.feed = KeyFeed(source, self._pushed, self._cond) if source is not None else None

    def _pushed(self, msg: Message) -> None:
        self._store(int(msg.meta["epoch"]), self._unpack(msg))

    def add(self, epoch: int, blob: bytes) -> None:
        self._store(epoch, self._load(blob))

    def _store(self, epoch: int, value: Any) -> None:
        with self._cond:
            self._keys[epoch] = value
            for old in sorted(self._keys)[:-KEEP_EPOCHS]:
                del self._keys[old]
            self._cond.notify_all()

    def epochs(self) -> list[int]:
        """The epochs whose key sets are held now."""
        with self._cond:
            return sorted(self._keys)

    def get(self, epoch: int) -> Any:
        """The key set of ``epoch``, waiting for it (PartyError if it does not come)."""
        feed = self.feed
        with self._cond:
            arrived = self._cond.wait_for(
                lambda: epoch in self._keys or (feed is not None and feed.ended), self.timeout_s
            )
            if epoch in self._keys:
                return self._keys[epoch]
        if arrived and feed is not None and feed.error is not None:
            raise feed.error
        raise PartyError(f"no key set for epoch {epoch} arrived from the key authority", "is the key authority up?")

    def until_done(self) -> None:
        """Wait until the key authority says the run is done (its later pushes are taken meanwhile)."""
        feed = self.feed
        assert feed is not None, "a key ring without a source hears no end"
        with self._cond:
            self._cond.wait_for(lambda: feed.ended, self.timeout_s)
        if feed.error is not None:
            raise feed.error
        if not feed.done:
            raise PartyError("the key authority did not end the run", "see its error")

    def close(self) -> None:
        """Stop taking pushes (the feed closes its channel)."""
        if self.feed is not None:
            self.feed.close()
