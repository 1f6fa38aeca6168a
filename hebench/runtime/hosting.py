"""Where the local runtime puts clients: one process each, or groups of them in a pool of worker processes."""

from __future__ import annotations

import os
from dataclasses import dataclass

from hebench.config import AUTO_POOL_ABOVE, RuntimeSpec


@dataclass(frozen=True)
class Hosting:
    """Client indices per pool worker (``pool-0``, ``pool-1``, …); no groups: one process per client."""

    groups: tuple[tuple[int, ...], ...] = ()

    @property
    def pooled(self) -> bool:
        return bool(self.groups)

    def workers(self) -> dict[str, tuple[int, ...]]:
        return {f"pool-{w}": group for w, group in enumerate(self.groups)}


def plan_hosting(spec: RuntimeSpec, clients: int, cores: tuple[int, ...] | None = None) -> Hosting:
    """The suite's hosting for ``clients`` clients; a pool defaults to one worker per usable core.

    Clients go to workers in contiguous blocks of near-equal size, so ``client-0`` (the evaluating
    client, the only one holding the test set) is in ``pool-0``.
    """
    if spec.hosting == "process" or (spec.hosting == "auto" and clients <= AUTO_POOL_ABOVE):
        return Hosting()
    usable = len(cores) if cores else len(os.sched_getaffinity(0))
    workers = min(spec.workers or usable, clients)
    base, extra = divmod(clients, workers)
    groups, start = [], 0
    for w in range(workers):
        size = base + (w < extra)
        groups.append(tuple(range(start, start + size)))
        start += size
    return Hosting(tuple(groups))
