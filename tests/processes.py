"""Processes a test starts end with it, passed or failed: the process and everything it started, in its own
sessions or not (psutil follows parent links, which a new session keeps)."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import time
from collections.abc import Iterator, Sequence

import psutil


def descendants(pid: int) -> list[psutil.Process]:
    """Every live process ``pid`` started, and theirs."""
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def alive(processes: list[psutil.Process]) -> list[psutil.Process]:
    """Those still running (a zombie has exited; the same pid reused by another program is not counted)."""
    out = []
    for proc in processes:
        with contextlib.suppress(psutil.NoSuchProcess):
            if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                out.append(proc)
    return out


def wait_gone(processes: list[psutil.Process], timeout_s: float) -> list[psutil.Process]:
    """Wait up to ``timeout_s`` for ``processes`` to exit; those still running."""
    deadline = time.monotonic() + timeout_s
    left = alive(processes)
    while left and time.monotonic() < deadline:
        time.sleep(0.2)
        left = alive(left)
    return left


def end_tree(
    proc: subprocess.Popen, first: int = signal.SIGTERM, grace_s: float = 60.0, also: Sequence[psutil.Process] = ()
) -> list[psutil.Process]:
    """Send ``first`` to ``proc``; after ``grace_s``, SIGKILL it and every process it had started (and ``also``:
    processes seen earlier, which an exited ``proc`` no longer leads to). Returns what needed SIGKILL (empty when
    ``proc`` ended its own processes)."""
    tree = [*also, *(p for p in descendants(proc.pid) if p not in also)]
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(first)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=grace_s)
    tree += [p for p in descendants(proc.pid) if p not in tree]
    left = wait_gone(tree, 0 if proc.poll() is None else 5.0)
    killed = alive([*([psutil.Process(proc.pid)] if proc.poll() is None else []), *left])
    for p in killed:
        with contextlib.suppress(psutil.NoSuchProcess):
            p.kill()
    if proc.poll() is None:
        proc.wait(timeout=10)
    wait_gone(killed, 10.0)
    return killed


@contextlib.contextmanager
def ended_at_exit(
    proc: subprocess.Popen, first: int = signal.SIGTERM, grace_s: float = 60.0
) -> Iterator[subprocess.Popen]:
    """``proc`` for the block; at exit however the block ends, :func:`end_tree` (``first``, then SIGKILL)."""
    try:
        yield proc
    finally:
        end_tree(proc, first, grace_s)
