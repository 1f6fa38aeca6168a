"""Which party's link the calling code is on: bound once per party process, or per client thread of a pool.

The runtime starts every party of a shaped run through :func:`run_bound` (the process's party), and a pool
worker binds each client thread with :func:`bound`. :func:`attach` then wraps every channel the party opens
(:class:`hebench.net.transport.Channel` calls it). In a shaped process a channel opened outside any party's
binding is refused rather than let through unshaped.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from hebench.errors import PartyError
from hebench.links.plan import Link, NetworkPlan
from hebench.net.shaping.shaper import PartyShaper
from hebench.net.shaping.wire import ShapedConnection


@dataclass(frozen=True)
class ShapingSetup:
    """What a shaped run's processes need (picklable): the plan, what userspace applies, and for the kernel
    backend each party's namespace (a ``/proc/PID/ns/net`` path) and address."""

    plan: NetworkPlan
    pace: bool  # userspace: rates in hebench's stream layer
    delays: bool  # delay, jitter and loss in userspace (userspace; kernel without netem)
    namespaces: dict[str, str] = field(default_factory=dict)  # party -> its namespace (kernel)
    addresses: dict[str, str] = field(default_factory=dict)  # party -> the address it listens on (kernel)

    def party_key(self, party: str) -> str:
        """The namespace a party lives in: ``engine-i`` shares ``client-i``'s (the engine is in the device)."""
        role, _, index = party.rpartition("-")
        return f"client-{index}" if role == "engine" else party


_setup: ShapingSetup | None = None
_process_party: str | None = None
_shapers: dict[str, PartyShaper] = {}
_lock = threading.Lock()
_local = threading.local()


def activate(setup: ShapingSetup, party: str | None) -> None:
    """Mark this process as part of a shaped run, on ``party``'s link (None: each thread binds its own)."""
    global _setup, _process_party
    _setup, _process_party = setup, party
    if party is not None:
        join_namespace(setup, party)


def deactivate() -> None:
    """Forget the process's binding (tests; a process that leaves the run)."""
    global _setup, _process_party
    _setup, _process_party = None, None
    _shapers.clear()


def _shaper(party: str) -> PartyShaper:
    assert _setup is not None
    with _lock:
        if party not in _shapers:
            link = _setup.plan.for_party(party)
            _shapers[party] = PartyShaper(link, pace=_setup.pace, delays=_setup.delays, seed=_setup.plan.seed)
        return _shapers[party]


@contextlib.contextmanager
def bound(party: str) -> Iterator[None]:
    """Bind the calling thread to ``party``'s link (a pooled client); no-op outside a shaped run."""
    if _setup is None:
        yield
        return
    join_namespace(_setup, party)
    previous = getattr(_local, "party", None)
    _local.party = party
    try:
        yield
    finally:
        _local.party = previous


def current_party() -> str | None:
    return getattr(_local, "party", None) or _process_party


def current() -> PartyShaper | None:
    """The calling thread's party shaper (None outside a shaped run)."""
    party = current_party()
    return None if _setup is None or party is None else _shaper(party)


def attach(conn: Any, peer: str) -> Any:
    """``conn`` shaped by the calling party's link; unchanged outside a shaped run."""
    if _setup is None:
        return conn
    shaper = current()
    if shaper is None:
        raise PartyError(
            f"a channel to {peer} was opened outside any party's link: it would bypass the network shaper",
            "open it in a thread bound to its party (hebench.net.shaping.scope.bound)",
        )
    if _setup.namespaces:
        widen_send_buffer(conn)
    return ShapedConnection(conn, shaper)


_SO_SNDBUFFORCE = 32  # Linux: SO_SNDBUF past net.core.wmem_max (root, as the kernel backend is)
KERNEL_SEND_BUFFER = 64 << 20


def widen_send_buffer(conn: Any) -> None:
    """Give a kernel-backend socket a send buffer as deep as loopback's, so that a party that pushes a frame to
    a peer not reading yet (the key authority's key sets, read by clients when their round needs them) is not
    held until the peer reads: over a shaped veth, TCP's autotuned buffer stops at a few hundred kB, and the
    run deadlocked there. The link's rate still applies (tbf), the buffer only changes when ``send`` returns."""
    with contextlib.suppress(OSError, AttributeError, ValueError):
        raw = getattr(conn, "sock", conn)  # a FramedSocket (TLS) holds its socket; a Connection is its own fd
        probe = socket.socket(fileno=os.dup(raw.fileno()))
        try:
            probe.setsockopt(socket.SOL_SOCKET, _SO_SNDBUFFORCE, KERNEL_SEND_BUFFER)
        finally:
            probe.close()


def mark_on_device(conn: Any) -> None:
    """A host's channel to its own engine: inside the client's device, not on its access link."""
    if isinstance(conn, ShapedConnection):
        conn.on_device = True


def take_ledger() -> dict[str, Any] | None:
    """The calling party's traffic on its link since the last take (None outside a shaped run)."""
    shaper = current()
    return None if shaper is None else shaper.take()


def current_link() -> Link | None:
    """The calling party's access link (None outside a shaped run: loopback, no link time)."""
    party = current_party()
    return None if _setup is None or party is None else _setup.plan.for_party(party).link


def compute_slowdown() -> float:
    """How many times slower the calling party computes than this machine (its tier's; 1 by default)."""
    party = current_party()
    if _setup is None or party is None:
        return 1.0
    return _setup.plan.for_party(party).compute_slowdown


def listen_host() -> str:
    """The address the calling party listens on: loopback, or its namespace's address (kernel)."""
    party = current_party()
    if _setup is None or party is None:
        return "127.0.0.1"
    return _setup.addresses.get(_setup.party_key(party), "127.0.0.1")


_CLONE_NEWNET = 0x40000000
_PR_SET_PDEATHSIG = 1


def join_namespace(setup: ShapingSetup, party: str) -> None:
    """Move the calling thread into ``party``'s network namespace (kernel backend; nothing otherwise)."""
    path = setup.namespaces.get(setup.party_key(party))
    if path is not None:
        enter_namespace(path, party)


def enter_namespace(path: str, party: str) -> None:
    """Move the calling thread into the network namespace at ``path`` (``party``'s, named in errors)."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(path, os.O_RDONLY)
    try:
        if libc.setns(fd, _CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            raise PartyError(f"cannot join {party}'s network namespace: {os.strerror(err)}", "run as root")
    finally:
        os.close(fd)


def die_with_parent() -> None:
    """Have the kernel kill this process when the process that started it dies (Linux), so a killed run
    leaves no party holding a namespace."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() == 1:  # the parent is already gone
            os._exit(1)


def run_bound(setup: ShapingSetup | None, party: str | None, target: Callable[..., Any], *args: Any) -> Any:
    """Process entry: bind this process to ``party``'s link (or let its threads bind), then run ``target``."""
    if setup is not None:
        if setup.namespaces:
            die_with_parent()
        activate(setup, party)
    return target(*args)


def run_placed(setup: ShapingSetup | None, party: str, target: Callable[..., Any], *args: Any) -> Any:
    """Process entry for a party whose peers are not hebench's shaped parties (Flower's hub): only placed in
    ``party``'s namespace (kernel backend), where the veth's qdiscs are its link; its channels stay unwrapped."""
    if setup is not None and setup.namespaces:
        die_with_parent()
        join_namespace(setup, party)
    return target(*args)
