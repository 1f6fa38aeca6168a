"""The kernel backend: each party in its own network namespace, joined by veth pairs shaped by ``tc``.

A holder process (:mod:`hebench.net.shaping.holder`) keeps one anonymous namespace per party and one hub
namespace with a bridge. Each party's namespace has one veth (``eth0``, an address on 10.201.0.0/16) whose
other end is a bridge port in the hub: ``tbf`` on the party's end shapes its uplink, ``tbf`` on the hub's end
its downlink, so a server's downlink is one pipe for all its clients. A client's offload engine lives in the
client's namespace: host <-> engine traffic stays inside it, unshaped. Where the kernel has ``netem``, it adds
delay, jitter and loss on the party's end; where it has not, the run says so and those come from userspace
(:class:`~hebench.net.shaping.shaper.PartyShaper` with pacing off).

Nothing is created in the machine's own namespace. The namespaces are anonymous: they vanish with the last
process in them, their veths and qdiscs with them. The holder and every party die with the run (the holder
when its pipe closes or through ``PR_SET_PDEATHSIG``, parties through the same signal), and :func:`sweep`
removes what a run killed in a way that escaped both left behind: each run's state file under
:data:`STATE_DIR` names its runner, holder and party processes by pid and start time.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hebench.errors import ParameterError, PartyError
from hebench.links.plan import Link, NetworkPlan
from hebench.net.shaping.scope import ShapingSetup

STATE_DIR = Path(os.environ.get("HEBENCH_NETNS_STATE", "/run/hebench-netns"))
HOLDER = "hebench.net.shaping.holder"
SUBNET = "10.201"
MTU = 1500


@dataclass(frozen=True)
class KernelCapabilities:
    """What this machine's kernel backend can apply."""

    root: bool
    ip: str | None
    tc: str | None
    tbf: bool = False
    netem: bool = False
    problem: str = ""  # why the backend cannot run ("" when it can)

    def applied(self) -> dict[str, Any]:
        """How a kernel-backend run applies its links here (the configuration record's ``applied``)."""
        out: dict[str, Any] = {"kernel": ["rate (tbf)"] + (["delay", "jitter", "loss (netem)"] if self.netem else [])}
        if not self.netem:
            out["userspace"] = ["delay", "jitter", "loss"]
            out["missing"] = ["netem: this kernel has no sch_netem, so delay, jitter and loss are applied in userspace"]
        return out


def _run(args: list[str], stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, input=stdin, capture_output=True, text=True, timeout=30, check=False)


@functools.cache
def kernel_capabilities() -> KernelCapabilities:
    """Probe once: root, ``ip`` and ``tc``, and which qdiscs work (in a throwaway namespace)."""
    root = os.geteuid() == 0
    ip, tc = shutil.which("ip"), shutil.which("tc")
    if not root:
        return KernelCapabilities(root, ip, tc, problem="it needs root (network namespaces and tc)")
    if ip is None or tc is None:
        return KernelCapabilities(root, ip, tc, problem="it needs iproute2's ip and tc (apt-get install iproute2)")
    holder = _Holder.start(1)
    try:
        ns = holder.namespaces[0]
        tbf = _in(ns, [tc, "qdisc", "add", "dev", "lo", "root", *tbf_args(125_000)])
        _in(ns, [tc, "qdisc", "del", "dev", "lo", "root"])
        netem = _in(ns, [tc, "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms"])
    finally:
        holder.close()
    problem = "" if tbf.returncode == 0 else f"tc cannot add a tbf qdisc here: {tbf.stderr.strip()}"
    return KernelCapabilities(root, ip, tc, tbf.returncode == 0, netem.returncode == 0, problem)


def check_kernel_backend(where: str) -> None:
    """One line naming the field and the fix when this machine cannot run the kernel backend."""
    caps = kernel_capabilities()
    if caps.problem:
        raise ParameterError(
            f"{where}: kernel cannot run here: {caps.problem}",
            "run as root with iproute2 installed, or set emulation: userspace (no privileges needed)",
        )


def _in(namespace: str, args: list[str], stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return _run(["nsenter", f"--net={namespace}", *args], stdin)


def _must(namespace: str, args: list[str], stdin: str | None = None) -> None:
    done = _in(namespace, args, stdin)
    if done.returncode != 0:
        raise PartyError(
            f"setting up the kernel network failed: {' '.join(args[:3])}: {done.stderr.strip()[:300]}",
            "check `ip` and `tc` work as root here, or use emulation: userspace",
        )


def _start_ticks(pid: int) -> str | None:
    """A process's start time (clock ticks since boot), to tell it from a later one with the same pid."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


@dataclass
class _Holder:
    proc: subprocess.Popen[str]
    namespaces: list[str]

    @classmethod
    def start(cls, count: int, mark: str = "") -> _Holder:
        proc = subprocess.Popen(
            [sys.executable, "-m", HOLDER, str(count), mark or f"runner-{os.getpid()}"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        )
        assert proc.stdout is not None
        line = proc.stdout.readline().split()
        if len(line) != count + 1:
            proc.kill()
            raise PartyError("could not create network namespaces", "run as root on Linux, or use emulation: userspace")
        pid = int(line[0])
        return cls(proc, [f"/proc/{pid}/task/{tid}/ns/net" for tid in line[1:]])

    def inodes(self) -> list[int]:
        return [os.stat(ns).st_ino for ns in self.namespaces]

    def close(self) -> None:
        with suppress(OSError):
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)


def tbf_args(rate_Bps: float) -> list[str]:
    """A tbf for ``rate``: a burst of 1 ms at the rate (at least two full frames), a queue of half a second."""
    burst = max(2 * MTU, int(rate_Bps / 1000))
    limit = max(64 * 1024, int(rate_Bps / 2), 2 * burst)
    return ["tbf", "rate", f"{int(rate_Bps * 8)}bit", "burst", str(burst), "limit", str(limit)]


def netem_args(link: Link) -> list[str]:
    out = ["netem"]
    if link.delay_s or link.jitter_s:
        out += ["delay", f"{link.delay_s * 1000:g}ms"] + ([f"{link.jitter_s * 1000:g}ms"] if link.jitter_s else [])
    if link.loss:
        out += ["loss", f"{link.loss * 100:g}%"]
    return out


@dataclass
class KernelNetwork:
    """A run's namespaces: one per party (``aggregator``, ``key_authority``, share holders, ``client-i``)."""

    plan: NetworkPlan
    holder: _Holder
    addresses: dict[str, str]
    namespaces: dict[str, str]
    state: Path | None
    caps: KernelCapabilities
    closed: bool = field(default=False)

    @classmethod
    def build(cls, plan: NetworkPlan, run_id: str, servers: tuple[str, ...]) -> KernelNetwork:
        """Namespaces for ``servers`` and every client of ``plan``, the hub's bridge, veths, addresses, qdiscs."""
        caps = kernel_capabilities()
        if caps.problem:
            raise ParameterError(
                f"network.emulation: kernel cannot run here: {caps.problem}", "use emulation: userspace"
            )
        sweep()
        parties = [*servers, *(c.party for c in plan.clients)]
        holder = _Holder.start(len(parties) + 1, f"run-{run_id}")
        state = _write_state(run_id, holder)
        net = cls(plan, holder, {}, {}, state, caps)
        try:
            net._wire(parties)
        except BaseException:
            net.close()
            raise
        return net

    def _wire(self, parties: list[str]) -> None:
        hub, *spaces = self.holder.namespaces
        hub_cmds = ["link set lo up", "link add br0 type bridge", "link set br0 up"]
        for k, (party, ns) in enumerate(zip(parties, spaces, strict=True)):
            hub_cmds += [f"link add h{k} type veth peer name eth0 netns {ns}", f"link set h{k} master br0"]
            hub_cmds.append(f"link set h{k} up")
            address = f"{SUBNET}.{k // 250}.{k % 250 + 1}"
            self.addresses[party], self.namespaces[party] = address, ns
        _must(hub, ["ip", "-batch", "-"], "\n".join(hub_cmds) + "\n")
        for k, party in enumerate(parties):
            ns, address = self.namespaces[party], self.addresses[party]
            _must(ns, ["ip", "-batch", "-"], f"link set lo up\naddr add {address}/16 dev eth0\nlink set eth0 up\n")
            link = self.plan.for_party(party).link
            if link.up_Bps is not None or (self.caps.netem and _needs_netem(link)):
                _must(ns, ["tc", "-batch", "-"], self._egress("eth0", link.up_Bps, link))
            if link.down_Bps is not None:
                _must(hub, ["tc", "-batch", "-"], self._egress(f"h{k}", link.down_Bps, None))

    def _egress(self, dev: str, rate: float | None, link: Link | None) -> str:
        """tc commands for one device's egress: netem (where the kernel has it and the link asks) above tbf."""
        if link is not None and self.caps.netem and _needs_netem(link):
            lines = [f"qdisc add dev {dev} root handle 1: {' '.join(netem_args(link))}"]
            if rate is not None:
                lines.append(f"qdisc add dev {dev} parent 1:1 handle 10: {' '.join(tbf_args(rate))}")
            return "\n".join(lines) + "\n"
        assert rate is not None
        return f"qdisc add dev {dev} root {' '.join(tbf_args(rate))}\n"

    def setup(self) -> ShapingSetup:
        """What the parties start with: their namespaces and addresses; delays in userspace without netem."""
        return ShapingSetup(
            self.plan,
            pace=False,
            delays=not self.caps.netem,
            namespaces=dict(self.namespaces),
            addresses=dict(self.addresses),
        )

    def register(self, pid: int) -> None:
        """Record a party process in the run's state file, so that :func:`sweep` can end it should the run die
        without it."""
        if self.state is None:
            return
        with suppress(OSError, ValueError):
            state = json.loads(self.state.read_text())
            state["processes"].append([pid, _start_ticks(pid)])
            self.state.write_text(json.dumps(state))

    def close(self) -> None:
        """End the holder (the namespaces go with the last process in them) and forget the run's state file."""
        if self.closed:
            return
        self.closed = True
        self.holder.close()
        if self.state is not None:
            with suppress(OSError):
                self.state.unlink()


def _needs_netem(link: Link) -> bool:
    return bool(link.delay_s or link.jitter_s or link.loss)


def _write_state(run_id: str, holder: _Holder) -> Path | None:
    """What :func:`sweep` needs should this run die without closing: who ran it, and the holder."""
    try:
        STATE_DIR.mkdir(parents=True, exist_ok=True)
        path = STATE_DIR / f"{os.getpid()}-{run_id}.json"
        state = {
            "runner": [os.getpid(), _start_ticks(os.getpid())],
            "processes": [[holder.proc.pid, _start_ticks(holder.proc.pid)]],
        }
        path.write_text(json.dumps(state))
        return path
    except OSError:
        return None


def _alive(pid: int, ticks: str | None) -> bool:
    """``pid`` is still the process that was recorded (same start time), not a later one that reused the pid."""
    return ticks is not None and _start_ticks(pid) == ticks


def sweep() -> list[int]:
    """Kill what dead runs left holding their namespaces: their holder and party processes, each recognised by
    its pid and start time (never by the namespace it is in: a freed namespace's number can be reused by a
    live run's); returns the pids killed. Runs that are alive are left alone."""
    killed: list[int] = []
    if not STATE_DIR.is_dir():
        return killed
    for path in STATE_DIR.glob("*.json"):
        try:
            state = json.loads(path.read_text())
            runner, runner_ticks = state["runner"]
            processes = [(int(pid), ticks) for pid, ticks in state.get("processes", ())]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if _alive(int(runner), runner_ticks):
            continue  # that run is still going
        for pid, ticks in processes:
            if pid != os.getpid() and _alive(pid, ticks):
                with suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
                    killed.append(pid)
        with suppress(OSError):
            path.unlink()
    if killed:
        time.sleep(0.2)  # let the kernel reap them and free the namespaces
    return killed
