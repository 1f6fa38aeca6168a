"""A pool worker: one process hosting many clients, each in its own thread.

Each hosted client keeps what a client process would hold: its data shard,
model, optimiser, key set and connections (to the aggregator, and to the key
authority in host-he). It is charged its own thread's CPU time, never a share
of the worker's; its records say so (``cpu_accounting: thread``) and name the
worker whose peak RSS they carry (``peak_rss_scope: worker``). PyTorch runs on
one thread per client and SEAL in the calling thread, so a client's work stays
on its thread. When the clients are done, the worker reports its own totals
(``pool_worker``): its process CPU, the CPU its client threads used, its peak RSS.
"""

from __future__ import annotations

import os
import threading
import time
from multiprocessing.connection import Connection
from typing import Any

from hebench.fl.client import serve_client
from hebench.fl.party import PartyContext, Wiring, report_error
from hebench.measure.memory import peak_rss_bytes
from hebench.net.shaping.scope import bound
from hebench.results.records import PoolWorkerRecord


def pool_main(name: str, clients: tuple[PartyContext, ...], control: Connection, records: Any) -> None:
    """Process entry: host ``clients`` as threads until every one is done; any failure ends the worker."""
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    if clients[0].cores:
        os.sched_setaffinity(0, set(clients[0].cores))
    import torch

    torch.set_num_threads(1)
    wirings: dict[int, Wiring] = control.recv()
    failed = threading.Event()
    thread_cpu: dict[int, float] = {}

    def host(ctx: PartyContext) -> None:
        torch.set_num_threads(1)  # OpenMP's thread count is per calling thread
        try:
            with bound(f"client-{ctx.client_index}"):  # this client's link (shaped runs)
                serve_client(ctx, wirings[ctx.client_index], records)
        except BaseException as err:  # reported as that client's failure; the runner names it
            report_error(f"client-{ctx.client_index}", err, records)
            failed.set()
        finally:
            thread_cpu[ctx.client_index] = time.thread_time()

    threads = [
        threading.Thread(target=host, args=(ctx,), name=f"client-{ctx.client_index}", daemon=True) for ctx in clients
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        while thread.is_alive() and not failed.is_set():
            thread.join(0.5)
    if failed.is_set():
        raise SystemExit(1)
    records.put(
        PoolWorkerRecord(
            config=clients[0].config.label,
            worker=name,
            clients=tuple(ctx.client_index for ctx in clients),
            process_cpu_s=time.process_time(),
            client_thread_cpu_s=sum(thread_cpu.values()),
            peak_rss_bytes=peak_rss_bytes(),
        )
    )
