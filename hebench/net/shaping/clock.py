"""Clocks for the shaper: the system's monotonic clock, or a manual one that tests and models advance."""

from __future__ import annotations

import threading
import time
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float: ...

    def sleep_until(self, t: float) -> None: ...


class MonotonicClock:
    """``CLOCK_MONOTONIC``: one timeline for every process on the machine (a frame's stamp is read by its peer)."""

    def now(self) -> float:
        return time.monotonic()

    def sleep_until(self, t: float) -> None:
        while (left := t - time.monotonic()) > 0:
            time.sleep(left)


class ManualClock:
    """A clock that moves only when told: ``sleep_until`` jumps to the time asked (records every sleep)."""

    def __init__(self, start: float = 0.0) -> None:
        self._t = start
        self._lock = threading.Lock()
        self.sleeps: list[tuple[float, float]] = []  # (from, until)

    def now(self) -> float:
        return self._t

    def advance(self, seconds: float) -> None:
        with self._lock:
            self._t += seconds

    def sleep_until(self, t: float) -> None:
        with self._lock:
            if t > self._t:
                self.sleeps.append((self._t, t))
                self._t = t
