"""A token bucket at a link's rate, as a schedule: when each reservation of bytes starts and finishes.

The bucket fills at ``rate`` bytes per second up to ``burst`` bytes. A reservation of ``n`` bytes that may
start at ``earliest`` takes the tokens there are and waits for the rest: it finishes ``n / rate`` after the
later of ``earliest`` and the end of the reservations before it, less what idle time banked (at most
``burst``). With ``burst = 0`` it is a pure pacer: back-to-back frames leave exactly at the rate.
"""

from __future__ import annotations

import threading


class TokenBucket:
    def __init__(self, rate_Bps: float | None, burst_bytes: float = 0.0) -> None:
        if rate_Bps is not None and not rate_Bps > 0:
            raise ValueError(f"a token bucket's rate must be positive, got {rate_Bps}")
        self.rate = rate_Bps
        self.burst_s = 0.0 if rate_Bps is None else burst_bytes / rate_Bps
        self._free = float("-inf")  # when the reservations so far have drained
        self._lock = threading.Lock()

    def reserve(self, nbytes: float, earliest: float) -> tuple[float, float]:
        """(start, finish) of sending ``nbytes`` that are ready at ``earliest``; later reservations queue behind."""
        if self.rate is None:
            return earliest, earliest
        with self._lock:
            base = max(self._free, earliest - self.burst_s)  # idle time banks tokens up to the burst
            finish = base + nbytes / self.rate
            self._free = finish
        return max(earliest, base), max(earliest, finish)
