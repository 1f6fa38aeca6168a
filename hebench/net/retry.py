"""Dialling again, with back-off, when a listener dropped the connection before authentication finished.

A door under a flood of unauthenticated sockets may push a real party's
handshake out (:mod:`hebench.net.admission`); the party then dials again,
waiting 50 ms, 100 ms, … (at most 2 s, jittered) until its set-up deadline.
Only a dropped or reset connection, or a handshake that ran out of time, is
tried again: a refused certificate, a wrong key or a listener that proved to
be the wrong party fails at once.
"""

from __future__ import annotations

import random
import ssl
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

FIRST_WAIT_S = 0.05
LONGEST_WAIT_S = 2.0
DROPPED: tuple[type[BaseException], ...] = (
    EOFError,
    ConnectionResetError,
    ConnectionAbortedError,
    BrokenPipeError,
    TimeoutError,
    ssl.SSLEOFError,
    ssl.SSLZeroReturnError,
)


class Dropped(Exception):
    """The listener dropped this attempt before authentication finished; ``error`` is what the next retry
    would otherwise lose (raised if no attempt succeeds)."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error


def with_backoff(attempt: Callable[[], T], retry_s: float) -> T:
    """``attempt()``, again after each :class:`Dropped` until ``retry_s`` has passed; then its error."""
    give_up = time.monotonic() + retry_s
    wait = FIRST_WAIT_S
    while True:
        try:
            return attempt()
        except Dropped as dropped:
            pause = wait * (0.5 + random.random())
            if time.monotonic() + pause >= give_up:
                raise dropped.error from None
            time.sleep(pause)
            wait = min(LONGEST_WAIT_S, wait * 2)
