"""The handshake pool of a listener: unauthenticated peers, bounded in number, per address and in time.

Every accepted connection gets its handshake thread through
:meth:`HandshakePool.start`. At most :data:`PER_PEER` handshakes from one
address and :data:`MAX_PENDING` in all are in flight; a newcomer is never
turned away for want of room: the oldest handshake of its own address makes
way (or, the pool being full, the oldest of the busiest address), so silent
sockets cannot hold the door against a real party, which finishes its
handshake in milliseconds and, were it pushed out, dials again
(:func:`hebench.net.retry.with_backoff`). One address can hold at most half
the pool, so other addresses always find room without displacing anyone.
A handshake past its deadline is aborted by the pool's one reaper thread.
Aborting shuts the socket down, so the handshake's blocking reads fail at
once.
"""

from __future__ import annotations

import heapq
import os
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any, TypeVar

MAX_PENDING = 128  # handshakes in flight at once, from every address together
PER_PEER = 64  # from one address: as many as a door took in all before (a run's parties share loopback)

EVICTED = "pushed out: too many handshakes in flight from its address"
TOO_SLOW = "too slow: no handshake within the deadline"
FAILED = "failed authentication"

T = TypeVar("T")


class Handshake:
    """One unauthenticated connection in the pool; :meth:`abort` shuts its socket down."""

    def __init__(self, raw: socket.socket, host: str, deadline: float) -> None:
        self.host, self.deadline = host, deadline
        self._probe = socket.socket(fileno=os.dup(raw.fileno()))  # survives the handshake detaching ``raw``
        self.state = "running"  # then "done", "evicted", "expired" or "closed"

    def abort(self, why: str) -> None:
        self.state = why
        try:
            self._probe.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def release(self) -> None:
        self._probe.close()


class HandshakePool:
    """Bounded, per-address-fair handshakes of one listener (or of several doors sharing it)."""

    def __init__(self, deadline_s: float, limit: int = MAX_PENDING, per_peer: int = PER_PEER) -> None:
        self.deadline_s, self.limit, self.per_peer = deadline_s, limit, min(per_peer, limit)
        self._lock = threading.Condition()
        self._by_host: dict[str, deque[Handshake]] = {}
        self._deadlines: list[tuple[float, int, Handshake]] = []
        self._count = 0
        self._closed = False
        threading.Thread(target=self._reap, daemon=True, name="handshake-reaper").start()

    @property
    def in_flight(self) -> int:
        with self._lock:
            return self._count

    def start(
        self,
        raw: socket.socket,
        peer: Any,
        handshake: Callable[[socket.socket], T],
        admitted: Callable[[T], None],
        refused: Callable[[Any, str, BaseException | None], None],
    ) -> None:
        """Run ``handshake(raw)`` on a thread of its own, within the deadline and the pool's bounds; then
        ``admitted(result)`` on the same thread, or ``refused(peer, kind, error)`` (``kind``: :data:`EVICTED`,
        :data:`TOO_SLOW` or :data:`FAILED`; nothing is reported for a pool closed meanwhile)."""
        entry = self._enter(raw, str(peer[0]) if isinstance(peer, tuple) else str(peer))
        threading.Thread(target=self._run, args=(entry, raw, peer, handshake, admitted, refused), daemon=True).start()

    def _run(self, entry: Handshake, raw, peer, handshake, admitted, refused) -> None:
        error: BaseException | None = None
        result = None
        try:
            result = handshake(raw)
        except Exception as err:  # any failure refuses this peer only
            error = err
        finished = self._leave(entry, ok=error is None)
        if finished:
            admitted(result)
            return
        if error is None:  # finished just as it was aborted: the socket is unusable
            _close(result)
        if entry.state != "closed":
            refused(peer, _kind(entry.state, error), error)

    def _enter(self, raw: socket.socket, host: str) -> Handshake:
        entry = Handshake(raw, host, time.monotonic() + self.deadline_s)
        with self._lock:
            own = self._by_host.setdefault(host, deque())
            victim = None
            if len(own) >= self.per_peer:
                victim = own[0]
            elif self._count >= self.limit:
                victim = max(self._by_host.values(), key=len)[0]
            if victim is not None:
                self._drop(victim)
                victim.abort("evicted")
            own.append(entry)
            self._count += 1
            heapq.heappush(self._deadlines, (entry.deadline, id(entry), entry))
            self._lock.notify()
        return entry

    def _drop(self, entry: Handshake) -> bool:
        """Take ``entry`` out of the pool (under the lock); False if it was out already."""
        queue = self._by_host.get(entry.host)
        if queue is None or entry not in queue:
            return False
        queue.remove(entry)
        if not queue:
            del self._by_host[entry.host]
        self._count -= 1
        return True

    def _leave(self, entry: Handshake, ok: bool) -> bool:
        """The handshake ended; True if it succeeded and was not aborted meanwhile (it may be used)."""
        with self._lock:
            still_in = self._drop(entry)
            if still_in and entry.state == "running":
                entry.state = "done" if ok else "failed"
        entry.release()
        return ok and entry.state == "done"

    def _reap(self) -> None:
        with self._lock:
            while not self._closed:
                now = time.monotonic()
                while self._deadlines and self._deadlines[0][0] <= now:
                    _, _, entry = heapq.heappop(self._deadlines)
                    if self._drop(entry):
                        entry.abort("expired")
                wait = self._deadlines[0][0] - now if self._deadlines else None
                self._lock.wait(wait)

    def close(self) -> None:
        """Abort every handshake in flight (reported as nothing) and stop the reaper."""
        with self._lock:
            self._closed = True
            for queue in list(self._by_host.values()):
                for entry in list(queue):
                    self._drop(entry)
                    entry.abort("closed")
            self._deadlines.clear()
            self._lock.notify()


def _kind(state: str, error: BaseException | None) -> str:
    if state == "evicted":
        return EVICTED
    if state == "expired" or _timed_out(error):
        return TOO_SLOW
    return FAILED


def _timed_out(error: BaseException | None) -> bool:
    """A timeout anywhere in the error's chain (handshakes often rewrap the socket's own)."""
    seen = 0
    while error is not None and seen < 5:
        if isinstance(error, TimeoutError) or "in time" in str(error):
            return True
        error, seen = error.__cause__ or error.__context__, seen + 1
    return False


def _close(thing: Any) -> None:
    close = getattr(thing, "close", None)
    if close is not None:
        try:
            close()
        except OSError:
            pass
