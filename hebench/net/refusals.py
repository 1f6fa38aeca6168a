"""Refused peers, counted per (peer address, kind) instead of reported one by one.

A flood of hostile connections must not become a flood of records or log
lines. The first refusal of each kind from an address is reported at once
(a failed run still shows what knocked); later ones are counted and reported
as one note with their count at most every ``every_s`` seconds, and the rest
when the listener closes (:meth:`RefusalNotes.flush`). Summing the counts of
a (peer, kind)'s notes gives every refusal. Beyond :data:`MAX_PEERS`
addresses, further ones are counted together as ``other addresses``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

MAX_PEERS = 32  # addresses counted apart; the rest together
OTHERS = "other addresses"
EVERY_S = 60.0


@dataclass(frozen=True)
class Refusal:
    """``count`` refusals of one kind from one peer address; ``problem`` describes the first of them."""

    peer: str
    kind: str
    problem: str
    count: int = 1


class RefusalNotes:
    """Counts refusals; hands ``report`` a bounded number of :class:`Refusal` notes."""

    def __init__(self, report: Callable[[Refusal], None], every_s: float = EVERY_S) -> None:
        self._report, self.every_s = report, every_s
        self._lock = threading.Lock()
        self._pending: dict[tuple[str, str], Refusal] = {}  # counted, not yet reported
        self._last: dict[tuple[str, str], float] = {}  # when each (peer, kind) was last reported
        self._peers: set[str] = set()
        self.total = 0

    def add(self, peer: str, kind: str, problem: str) -> None:
        now = time.monotonic()
        with self._lock:
            self.total += 1
            if peer not in self._peers:
                if len(self._peers) >= MAX_PEERS:
                    peer = OTHERS
                self._peers.add(peer)
            key = (peer, kind)
            held = self._pending.get(key)
            count = 1 + (held.count if held else 0)
            note = Refusal(peer, kind, held.problem if held else problem, count)
            due = key not in self._last or now - self._last[key] >= self.every_s
            if due:
                self._pending.pop(key, None)
                self._last[key] = now
            else:
                self._pending[key] = note
        if due:
            self._report(note)

    def flush(self) -> None:
        """Report every count not reported yet."""
        with self._lock:
            notes = list(self._pending.values())
            self._pending.clear()
            now = time.monotonic()
            for note in notes:
                self._last[(note.peer, note.kind)] = now
        for note in notes:
            self._report(note)
