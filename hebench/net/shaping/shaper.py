"""One party's link applied to its frames: pacing on its uplink and downlink, latency, loss; and a ledger.

A frame from A to B leaves A's uplink at A's rate (A's sender is held until its last byte is out) and enters
B's downlink from the moment its first byte left A, so the two links pipeline as one path does: B holds the
frame until the later of its arrival, A's uplink's finish and its own downlink's finish. The bytes themselves
cross loopback at once, so copying them never adds to the link's time. Rates are link rates: each segment
of MSS payload bytes carries HEADER bytes of Ethernet, IP and TCP headers (what ``tbf`` counts, see
:mod:`hebench.links.segments`). Each side then adds its own link's one-way delay (± jitter)
and, for each lost segment, a round trip of its link plus the segment resent on that link
(loss as retransmission delay; TCP's shrinking window is not modelled). The sender's part travels with the
frame in a stamp (:mod:`hebench.net.shaping.wire`). Times are ``CLOCK_MONOTONIC``, which every process of the
machine shares.

The ledger counts, per party, what crossed its access link and how long the party was held by it.
"""

from __future__ import annotations

import math
import threading
import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from hebench.links.plan import PartyLink
from hebench.links.segments import HEADER, MSS, wire_bytes
from hebench.net.shaping.bucket import TokenBucket
from hebench.net.shaping.clock import Clock, MonotonicClock


@dataclass
class Ledger:
    """What crossed a party's access link since the last ``take``."""

    up_bytes: int = 0
    down_bytes: int = 0
    frames_up: int = 0
    frames_down: int = 0
    up_busy_s: float = 0.0  # the uplink's time carrying this party's bytes (bytes / the link's rate, resends included)
    down_busy_s: float = 0.0
    transfer_s: float = 0.0  # wall time the party was held by its links (sending, and receiving after arrival)
    lost_segments: int = 0
    turns: int = 0  # runs of frames in one direction: each costs (at least) a one-way latency
    on_device_bytes: int = 0  # host <-> its own engine: not on the access link


@dataclass(frozen=True)
class Departure:
    """A frame scheduled on an uplink: its bytes (payload, on the wire, segments lost), when the sender asked,
    when its first and last byte leave, and the sender's share of the latency."""

    nbytes: int
    wire: int
    lost: int
    called: float
    start: float
    finish: float
    lag: float


def _busy(nbytes: int, rate: float | None) -> float:
    """How long ``nbytes`` occupy a link of ``rate`` (whoever paces it: this shaper, the kernel, or a model)."""
    return 0.0 if rate is None else nbytes / rate


class PartyShaper:
    """``pace``: apply the link's rates (userspace); ``delays``: apply delay, jitter and loss (userspace, and
    the kernel backend where the kernel lacks ``netem``). Neither: record only (model backend)."""

    def __init__(
        self,
        party: PartyLink,
        *,
        pace: bool = True,
        delays: bool = True,
        clock: Clock | None = None,
        seed: int = 0,
        burst_bytes: float = 0.0,
    ) -> None:
        self.party, self.pace, self.delays = party, pace, delays
        self.clock = clock or MonotonicClock()
        link = party.link
        self.up = TokenBucket(link.up_Bps if pace else None, burst_bytes)
        self.down = TokenBucket(link.down_Bps if pace else None, burst_bytes)
        self._rng = np.random.default_rng([seed, zlib.crc32(party.party.encode())])
        self._lock = threading.Lock()
        self._ledger = Ledger()
        self._last: str | None = None

    def _latency(self, nbytes: int) -> tuple[float, int]:
        """This side's one-way latency for a frame (delay, jitter, lost segments' round trips) and segments lost."""
        link = self.party.link
        if not self.delays:
            return 0.0, 0
        with self._lock:  # one generator per party, drawn in frame order
            jitter = float(self._rng.uniform(-link.jitter_s, link.jitter_s)) if link.jitter_s else 0.0
            lost = int(self._rng.binomial(math.ceil(nbytes / MSS) or 1, link.loss)) if link.loss else 0
        return max(0.0, link.delay_s + jitter) + lost * 2 * link.delay_s, lost

    def _count(self, direction: str, nbytes: int, busy: float, held: float, lost: int) -> None:
        with self._lock:
            led = self._ledger
            if direction == "up":
                led.up_bytes += nbytes
                led.frames_up += 1
                led.up_busy_s += busy
            else:
                led.down_bytes += nbytes
                led.frames_down += 1
                led.down_busy_s += busy
            led.transfer_s += held
            led.lost_segments += lost
            if self._last != direction:
                led.turns += 1
                self._last = direction

    def send(self, nbytes: int) -> Departure:
        """Schedule a frame on the uplink (the caller writes it, then calls :meth:`sent`)."""
        now = self.clock.now()
        lag, lost = self._latency(nbytes)
        wire = wire_bytes(nbytes) + lost * (MSS + HEADER)
        start, finish = self.up.reserve(wire, now)
        return Departure(nbytes, wire, lost, now, start, finish, lag)

    def sent(self, frame: Departure) -> None:
        """Hold the caller until the frame's last byte has left the uplink."""
        self.clock.sleep_until(frame.finish)
        held = frame.finish - frame.called  # the link's hold, not the time writing to loopback took
        self._count("up", frame.nbytes, _busy(frame.wire, self.party.link.up_Bps), held, frame.lost)

    def receive(self, nbytes: int, first_byte: float, last_byte: float, sender_lag: float) -> None:
        """Hold the caller until the frame is due: out of the sender's uplink and through this side's downlink,
        plus both sides' latency. The latency runs from the frame's departure, not from when the caller got to
        it: a frame read late (the aggregator reading its clients one after another) is not delayed again."""
        arrived = self.clock.now()
        lag, lost = self._latency(nbytes)
        wire = wire_bytes(nbytes) + lost * (MSS + HEADER)
        _, finish = self.down.reserve(wire, min(first_byte, arrived))
        deliver = max(arrived, max(last_byte, finish) + sender_lag + lag)
        self.clock.sleep_until(deliver)
        self._count("down", nbytes, _busy(wire, self.party.link.down_Bps), deliver - arrived, lost)

    def on_device(self, nbytes: int) -> None:
        with self._lock:
            self._ledger.on_device_bytes += nbytes

    def take(self) -> dict[str, Any]:
        """The ledger since the last take (then reset), with the link it is about."""
        with self._lock:
            led, self._ledger, self._last = self._ledger, Ledger(), None  # the next frame starts a new run
        out: dict[str, Any] = {"link": self.party.link.name, **led.__dict__}
        if self.party.tier is not None:
            out["tier"] = self.party.tier
        if self.party.compute_slowdown != 1.0:
            out["compute_slowdown"] = self.party.compute_slowdown
        return out
