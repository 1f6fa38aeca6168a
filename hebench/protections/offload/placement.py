"""Which cores hosts and local engines run on (disjoint where the machine allows)."""

from __future__ import annotations

import os
from dataclasses import dataclass

from hebench.config import OffloadSpec


@dataclass(frozen=True)
class Placement:
    host_cores: tuple[int, ...]
    engine_cores: tuple[int, ...]


def place(spec: OffloadSpec) -> Placement:
    available = sorted(os.sched_getaffinity(0))
    engine = spec.engine_cores or tuple(available[-max(1, len(available) // 2) :])
    host = spec.host_cores or (tuple(c for c in available if c not in engine) or tuple(available))
    return Placement(tuple(host), tuple(engine))
