"""Shaper fidelity: achieved over configured rate for one transfer of 64 kB to 256 MB, per backend.

``userspace``: one frame through a :class:`~hebench.net.shaping.wire.ShapedConnection` over TCP loopback,
paced on the sender's uplink. ``kernel`` (root): the same bytes over TCP from one network namespace to
another, through the sender's veth shaped by ``tbf``. Each is timed from the sender's first call to the
receiver's last byte (``CLOCK_MONOTONIC``, shared by both ends); the achieved rate counts what the link
carries (payload and segment headers, :func:`hebench.links.segments.wire_bytes`), as a link's rate does.
Goals: within 5 % of the rate from 1 MB up; kernel within 10 % of userspace on the same transfer.
"""

from __future__ import annotations

import socket
import statistics
import subprocess
import sys
import textwrap
import threading
import time
from multiprocessing.connection import Connection
from typing import Any

from hebench.bench.registry import Option, ints, number, study
from hebench.config import NetworkSpec
from hebench.links.plan import MBIT, Link, PartyLink, plan_network
from hebench.links.segments import wire_bytes
from hebench.net.shaping.shaper import PartyShaper
from hebench.net.shaping.wire import ShapedConnection

SIZES = (64_000, 1_000_000, 4_000_000, 16_000_000, 64_000_000)


def userspace_transfer(nbytes: int, rate_mbit: float) -> float:
    """Seconds for ``nbytes`` in one shaped frame over TCP loopback."""
    listener = socket.create_server(("127.0.0.1", 0))
    sender_sock = socket.create_connection(listener.getsockname())
    receiver_sock, _ = listener.accept()
    listener.close()
    up = PartyShaper(PartyLink("client-0", "client", Link("bench", up_Bps=rate_mbit * MBIT)))
    down = PartyShaper(PartyLink("aggregator", "server", Link("unlimited")))
    sender = ShapedConnection(Connection(sender_sock.detach()), up)
    receiver = ShapedConnection(Connection(receiver_sock.detach()), down)
    payload = bytes(nbytes)
    started: list[float] = []

    def send() -> None:
        started.append(time.monotonic())
        sender.send_bytes(payload)

    thread = threading.Thread(target=send)
    thread.start()
    got = receiver.recv_bytes()
    done = time.monotonic()
    thread.join()
    sender.close()
    receiver.close()
    assert len(got) == nbytes
    return done - started[0]


_SINK = textwrap.dedent(
    """
    import socket, sys, time
    s = socket.create_server((sys.argv[1], 7777)); print("listening", flush=True)
    c, _ = s.accept(); got, want = 0, int(sys.argv[2]); buf = bytearray(1 << 20)
    while got < want and (k := c.recv_into(buf)): got += k
    print(time.monotonic(), got, flush=True)
    """
)
_SOURCE = textwrap.dedent(
    """
    import socket, sys, time
    c = socket.create_connection((sys.argv[1], 7777), timeout=60)
    print(time.monotonic(), flush=True); c.sendall(bytes(int(sys.argv[2]))); c.shutdown(socket.SHUT_WR); c.recv(1)
    """
)


def kernel_transfers(sizes: tuple[int, ...], rate_mbit: float) -> dict[int, float]:
    """Seconds for each transfer from a client namespace to the aggregator's, through the client's tbf."""
    from hebench.net.shaping.kernel import KernelNetwork

    spec = NetworkSpec.model_validate({"clients": {"uplink_mbit": rate_mbit}, "emulation": "kernel"})
    net = KernelNetwork.build(plan_network(spec, clients=1, seed=0), "fidelity", ("aggregator",))
    out = {}
    try:
        server, client = net.namespaces["aggregator"], net.namespaces["client-0"]
        address = net.addresses["aggregator"]
        for n in sizes:
            sink = subprocess.Popen(
                ["nsenter", f"--net={server}", sys.executable, "-c", _SINK, address, str(n)],
                stdout=subprocess.PIPE,
                text=True,
            )
            assert sink.stdout is not None and sink.stdout.readline().strip() == "listening"
            source = subprocess.run(
                ["nsenter", f"--net={client}", sys.executable, "-c", _SOURCE, address, str(n)],
                capture_output=True,
                text=True,
                timeout=3600,
                check=True,
            )
            end, got = sink.stdout.readline().split()
            sink.wait(timeout=60)
            assert int(got) == n
            out[n] = float(end) - float(source.stdout.split()[0])
    finally:
        net.close()
    return out


@study(
    "shaper_fidelity",
    options=(
        Option("--fidelity-sizes", "sizes", "bytes per transfer, up to 256e6 (default 64000,...,64000000)", ints),
        Option("--fidelity-rate", "rate_mbit", "link rate in Mbit/s (default 100)", number),
    ),
)
def shaper_fidelity(
    sizes: tuple[int, ...] = SIZES, rate_mbit: float = 100.0, kernel: bool = True, repeats: int = 3
) -> dict[str, Any]:
    """Achieved over configured link rate for one transfer of 64 kB to 64 MB, userspace and kernel shaping.

    Achieved / configured rate per size and backend (median of ``repeats`` transfers), and kernel / userspace
    time on the same transfer."""
    from hebench.net.shaping.kernel import kernel_capabilities

    rows: list[dict[str, Any]] = []
    configured = rate_mbit * MBIT
    user = {n: statistics.median(userspace_transfer(n, rate_mbit) for _ in range(repeats)) for n in sizes}
    caps = kernel_capabilities()
    kern: dict[int, float] = {}
    if kernel and not caps.problem:
        runs = [kernel_transfers(sizes, rate_mbit) for _ in range(repeats)]
        kern = {n: statistics.median(run[n] for run in runs) for n in sizes}
    for n in sizes:
        row: dict[str, Any] = {"bytes": n, "userspace_s": user[n]}
        row["ideal_s"] = wire_bytes(n) / configured
        row["userspace_achieved_over_configured"] = wire_bytes(n) / user[n] / configured
        if n in kern:
            row["kernel_s"] = kern[n]
            row["kernel_achieved_over_configured"] = wire_bytes(n) / kern[n] / configured
            row["kernel_over_userspace"] = kern[n] / user[n]
        rows.append(row)
    graded = [r for r in rows if r["bytes"] >= 1_000_000]
    return {
        "benchmark": "shaper_fidelity",
        "rate_mbit": rate_mbit,
        "repeats": repeats,
        "kernel": "ran" if kern else f"skipped: {caps.problem or 'not asked'}",
        "goals": {"achieved_within": 0.05, "from_bytes": 1_000_000, "kernel_vs_userspace_within": 0.10},
        "rows": rows,
        "meets_goals": {
            "userspace": all(abs(r["userspace_achieved_over_configured"] - 1) <= 0.05 for r in graded),
            "kernel": all(abs(r["kernel_achieved_over_configured"] - 1) <= 0.05 for r in graded) if kern else None,
            "kernel_vs_userspace": all(abs(r["kernel_over_userspace"] - 1) <= 0.10 for r in graded) if kern else None,
        },
    }


if __name__ == "__main__":
    import json

    sizes = tuple(int(s) for s in sys.argv[1].split(",")) if len(sys.argv) > 1 else SIZES
    rate = float(sys.argv[2]) if len(sys.argv) > 2 else 100.0
    print(json.dumps(shaper_fidelity(sizes, rate), indent=2))
