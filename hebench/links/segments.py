"""What a link carries for a frame: its payload cut into TCP segments, each with its headers."""

from __future__ import annotations

import math

MSS = 1448  # bytes of payload per TCP segment (1500-byte MTU, IPv4, timestamps)
HEADER = 66  # Ethernet (14), IPv4 (20) and TCP with timestamps (32) bytes per segment


def segments(payload: int) -> int:
    return math.ceil(payload / MSS)


def wire_bytes(payload: int) -> int:
    """The bytes a link carries for ``payload`` bytes of frames: the payload and its segments' headers (what
    the kernel's ``tbf`` counts against the rate)."""
    return payload + segments(payload) * HEADER
