"""CPU cycles from Linux perf_event, where the machine exposes a hardware counter.

Many virtual machines expose only software events; then :func:`open_cycle_counter`
returns ``None`` and a reason, and hebench records cycles as unavailable
rather than inventing them.
"""

from __future__ import annotations

import ctypes
import os
import struct
from functools import lru_cache

_PERF_TYPE_HARDWARE = 0
_PERF_COUNT_HW_CPU_CYCLES = 0
_SYS_PERF_EVENT_OPEN = {"x86_64": 298, "aarch64": 241}
_ATTR_SIZE = 128
_FLAG_INHERIT, _FLAG_EXCLUDE_KERNEL, _FLAG_EXCLUDE_HV = 1 << 1, 1 << 5, 1 << 6


class CycleCounter:
    """User-space cycles of this process (threads created later included)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def read(self) -> int:
        return struct.unpack("Q", os.read(self._fd, 8))[0]

    def close(self) -> None:
        os.close(self._fd)


@lru_cache(maxsize=1)
def cycles_unavailable_reason() -> str:
    """Empty when a hardware cycle counter can be opened here."""
    counter, reason = open_cycle_counter()
    if counter is not None:
        counter.close()
    return reason


def open_cycle_counter() -> tuple[CycleCounter | None, str]:
    machine = os.uname().machine
    number = _SYS_PERF_EVENT_OPEN.get(machine)
    if number is None:
        return None, f"perf_event_open syscall number unknown for {machine}"
    attr = bytearray(_ATTR_SIZE)
    struct.pack_into("IIQQ", attr, 0, _PERF_TYPE_HARDWARE, _ATTR_SIZE, _PERF_COUNT_HW_CPU_CYCLES, 0)
    struct.pack_into("Q", attr, 40, _FLAG_INHERIT | _FLAG_EXCLUDE_KERNEL | _FLAG_EXCLUDE_HV)
    libc = ctypes.CDLL(None, use_errno=True)
    buf = (ctypes.c_char * _ATTR_SIZE).from_buffer(attr)
    fd = libc.syscall(number, buf, 0, -1, -1, 0)
    if fd < 0:
        err = ctypes.get_errno()
        return None, f"perf_event_open(cycles) failed: {os.strerror(err)} (errno {err}); no hardware counter exposed"
    return CycleCounter(fd), ""
