"""Attack restarts in parallel worker processes (CPU), or one after another on a GPU.

Restarts are independent (each has its own seed), so they spread over
``workers`` spawned processes, each pinned to one torch thread. On CUDA the
restarts run in this process, one after another, on the device. Results come
back in submission order whatever the completion order, so a campaign is the
same for any number of workers.
"""

from __future__ import annotations

import atexit
import os
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from types import TracebackType

import torch

from hebench.inversion.attacks import AttackConfig, Reconstruction, reconstruct_one
from hebench.inversion.devices import resolve_device
from hebench.inversion.views.observation import Observation


def default_workers() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)


def _init_worker() -> None:
    torch.set_num_threads(1)


def _run(obs: Observation, cfg: AttackConfig, seed: int, device: str) -> Reconstruction:
    if device != "cpu":
        return reconstruct_one(obs.to(device), cfg, seed)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as in the workers: the same arithmetic, so results do not depend on ``workers``
    try:
        return reconstruct_one(obs, cfg, seed)
    finally:
        torch.set_num_threads(threads)


class _Done:
    """A finished result with a Future's ``result()``."""

    def __init__(self, value: Reconstruction) -> None:
        self.value = value

    def result(self) -> Reconstruction:
        return self.value


class RestartPool:
    """``submit`` restarts, ``result()`` them in order; ``workers`` processes on CPU, in-process on CUDA."""

    def __init__(self, workers: int | None = None, device: str = "auto") -> None:
        self.device = resolve_device(device)
        self.workers = 1 if self.device != "cpu" else (workers or default_workers())
        self._pool: ProcessPoolExecutor | None = None

    def submit(self, obs: Observation, cfg: AttackConfig, seed: int) -> Future[Reconstruction] | _Done:
        if self.workers <= 1:
            return _Done(_run(obs, cfg, seed, self.device))
        if self._pool is None:
            import multiprocessing

            ctx = multiprocessing.get_context("spawn")  # fork after torch's thread pools start can deadlock
            self._pool = ProcessPoolExecutor(self.workers, mp_context=ctx, initializer=_init_worker)
        return self._pool.submit(_run, obs, cfg, seed, self.device)

    def map(self, jobs: list[tuple[Observation, AttackConfig, int]]) -> Iterator[Reconstruction]:
        futures = [self.submit(*job) for job in jobs]
        for f in futures:
            yield f.result()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)
            self._pool = None

    def __enter__(self) -> RestartPool:
        return self

    def __exit__(self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


_SHARED: dict[tuple[int | None, str], RestartPool] = {}


def shared_pool(workers: int | None, device: str) -> RestartPool:
    """One pool per (workers, device) for the whole process, so plans run one by one reuse started workers."""
    key = (workers, resolve_device(device))
    if key not in _SHARED:
        _SHARED[key] = RestartPool(workers, device)
    return _SHARED[key]


@atexit.register
def _close_shared() -> None:
    for pool in _SHARED.values():
        pool.close()
    _SHARED.clear()
