"""Holds a run's network namespaces: one thread per namespace, until its standard input closes.

``python -m hebench.net.shaping.holder N RUN_MARK`` makes N network namespaces (each thread of this process
calls ``unshare(CLONE_NEWNET)``), prints this process's pid and the N thread ids on one line, and waits. When
the run closes the pipe, or dies (the pipe closes; the kernel also sends SIGKILL through
``PR_SET_PDEATHSIG``), the holder exits, and with it every namespace no party still uses: anonymous
namespaces leave nothing behind, their veths and qdiscs included.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading

CLONE_NEWNET = 0x40000000
PR_SET_PDEATHSIG = 1


def main() -> None:
    count = int(sys.argv[1])
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() == 1:
        os._exit(1)
    ready, hold, tids = threading.Barrier(count + 1), threading.Event(), [0] * count

    def held(k: int) -> None:
        if libc.unshare(CLONE_NEWNET) != 0:
            os._exit(3)
        tids[k] = threading.get_native_id()
        ready.wait()
        hold.wait()

    for k in range(count):
        threading.Thread(target=held, args=(k,), daemon=True).start()
    ready.wait()
    print(os.getpid(), *tids, flush=True)
    sys.stdin.read()  # until the run closes the pipe, or dies
    os._exit(0)


if __name__ == "__main__":
    main()
