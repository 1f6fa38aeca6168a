"""Attack restarts, batched, in worker processes on the CPU or in this process on a GPU.

``submit`` queues a restart; the first ``result()`` asked for sends every queued restart at once, grouped into
batches (:mod:`hebench.inversion.batching`): restarts whose observations share a model and a threat model run
as one batch, so restarts, images and configurations of a campaign share passes. On the CPU the batches
spread over ``workers`` spawned processes with one torch thread each (on 2 shared cores, two single-threaded
processes measured faster than one process with two threads); each worker keeps freed memory for reuse
instead of returning it to the OS (a batch allocates the same large tensors every step, and giving them back
costs page faults that measured slower than the arithmetic). On CUDA the batches run here, one after another,
each as large as the probed memory allows. The serial engine (``engine: serial``) sends each restart on its
own, as hebench did before batching. Results come back in submission order whatever the completion order.
"""

from __future__ import annotations

import atexit
import math
import os
from collections.abc import Hashable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from types import TracebackType

import torch

from hebench.inversion.attacks import AttackConfig, Reconstruction, reconstruct
from hebench.inversion.batching import batch_key, chunks, cpu_cap, cuda_cap
from hebench.inversion.devices import resolve_device
from hebench.inversion.views.observation import Observation


def default_workers() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)


def keep_freed_memory() -> bool:
    """glibc: serve large blocks from the heap and keep freed memory (no ``mmap`` and page faults per
    allocation); False where the C library has no ``mallopt``."""
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    m_trim_threshold, m_mmap_threshold = -1, -3
    return bool(mallopt(m_mmap_threshold, 1 << 30)) and bool(mallopt(m_trim_threshold, 1 << 30))


def _init_worker(keep_memory: bool = True) -> None:
    torch.set_num_threads(1)
    if keep_memory:
        keep_freed_memory()


def _move(observations: list[Observation], device: str) -> list[Observation]:
    """The observations on ``device``, a shared model moved once."""
    moved: dict[int, torch.nn.Module] = {}
    out = []
    for obs in observations:
        if id(obs.model) not in moved:
            moved[id(obs.model)] = obs.to(device).model
        out.append(replace(obs.to(device), model=moved[id(obs.model)]))
    return out


def _run(observations: list[Observation], cfg: AttackConfig, seeds: list[int], device: str) -> list[Reconstruction]:
    if device != "cpu":
        return reconstruct(_move(observations, device), cfg, seeds)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as in the workers: the same arithmetic, so results do not depend on ``workers``
    try:
        return reconstruct(observations, cfg, seeds)
    finally:
        torch.set_num_threads(threads)


@dataclass
class PoolStats:
    """What the pool ran: restarts, batches, the largest batch, the engines."""

    restarts: int = 0
    batches: int = 0
    largest: int = 0
    engines: set[str] = field(default_factory=set)


class Pending:
    """A queued restart; ``result()`` sends the queue if it has not gone yet and waits for this one."""

    def __init__(self, pool: RestartPool) -> None:
        self.pool = pool
        self.batch: Future[list[Reconstruction]] | _Done | None = None
        self.index = 0

    def result(self) -> Reconstruction:
        if self.batch is None:
            self.pool.flush()
        assert self.batch is not None
        return self.batch.result()[self.index]


class _Done:
    """A finished batch with a Future's ``result()``."""

    def __init__(self, value: list[Reconstruction]) -> None:
        self.value = value

    def result(self) -> list[Reconstruction]:
        return self.value


class RestartPool:
    """``submit`` restarts, ``result()`` them in order; batches over ``workers`` processes on CPU, here on CUDA."""

    def __init__(self, workers: int | None = None, device: str = "auto", keep_memory: bool = True) -> None:
        self.device = resolve_device(device)
        self.keep_memory = keep_memory  # workers keep freed memory (False: the allocator's default, as before #37)
        self.workers = 1 if self.device != "cpu" else (workers or default_workers())
        self._pool: ProcessPoolExecutor | None = None
        self._queue: list[tuple[Observation, AttackConfig, int, Pending]] = []
        self.stats = PoolStats()

    def submit(self, obs: Observation, cfg: AttackConfig, seed: int) -> Pending:
        handle = Pending(self)
        self._queue.append((obs, cfg, seed, handle))
        return handle

    def flush(self) -> None:
        """Send every queued restart, in batches."""
        queue, self._queue = self._queue, []
        groups: dict[Hashable, list[tuple[Observation, AttackConfig, int, Pending]]] = {}
        fingerprints: dict[int, str] = {}
        for job in queue:
            obs, cfg = job[0], job[1]
            key = (cfg, batch_key(obs, fingerprints)) if cfg.engine == "batched" else (cfg, id(job[3]))
            groups.setdefault(key, []).append(job)
        working = sum(jobs[0][0].gradients is not None for jobs in groups.values())
        cores = default_workers() if self.device == "cpu" else 1
        split = math.ceil(cores / max(working, 1))  # cut batches only where there are fewer groups than cores
        for jobs in groups.values():
            cfg = jobs[0][1]
            self.stats.engines.add(cfg.engine)
            for part in chunks(len(jobs), self._cap(jobs), split):
                batch = [jobs[i] for i in part]
                future = self._send([j[0] for j in batch], cfg, [j[2] for j in batch])
                for index, (*_, handle) in enumerate(batch):
                    handle.batch, handle.index = future, index
                self.stats.restarts += len(batch)
                self.stats.batches += 1
                self.stats.largest = max(self.stats.largest, len(batch))

    def _cap(self, jobs: list[tuple[Observation, AttackConfig, int, Pending]]) -> int:
        obs, cfg = jobs[0][0], jobs[0][1]
        if cfg.engine != "batched" or obs.gradients is None:
            return 1 if cfg.engine != "batched" else len(jobs)
        if self.device == "cpu":
            return cpu_cap(obs, cfg)
        probe = _move([j[0] for j in jobs[:4]], self.device)
        return cuda_cap(probe, cfg, [j[2] for j in jobs[:4]])

    def _send(
        self, observations: list[Observation], cfg: AttackConfig, seeds: list[int]
    ) -> Future[list[Reconstruction]] | _Done:
        if self.workers <= 1:
            return _Done(_run(observations, cfg, seeds, self.device))
        if self._pool is None:
            import multiprocessing

            ctx = multiprocessing.get_context("spawn")  # fork after torch's thread pools start can deadlock
            self._pool = ProcessPoolExecutor(
                self.workers, mp_context=ctx, initializer=_init_worker, initargs=(self.keep_memory,)
            )
        return self._pool.submit(_run, observations, cfg, seeds, self.device)

    def map(self, jobs: list[tuple[Observation, AttackConfig, int]]) -> Iterator[Reconstruction]:
        handles = [self.submit(*job) for job in jobs]
        for h in handles:
            yield h.result()

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
