"""The kernel backend: namespaces and shaped veths that carry the traffic, and nothing left behind afterwards,
also when the run is killed. Needs root and iproute2; skipped with the reason elsewhere."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from hebench.config import NetworkSpec
from hebench.errors import ParameterError
from hebench.links.plan import plan_network
from hebench.net.shaping import kernel
from hebench.net.shaping.kernel import KernelCapabilities, KernelNetwork, check_kernel_backend, sweep
from tests.conftest import INSTALLED
from tests.processes import descendants, end_tree, ended_at_exit

CAPS = kernel.kernel_capabilities()
needs_kernel = pytest.mark.skipif(bool(CAPS.problem), reason=f"kernel backend unavailable: {CAPS.problem}")
ROOT = Path(__file__).resolve().parents[2]
SPEC = {"clients": {"uplink_mbit": 8, "downlink_mbit": 16, "delay_ms": 5}, "server": {"uplink_mbit": 80}}


def namespaces_in_use() -> set[int]:
    """Every network namespace some thread is in (anonymous namespaces live only as long as one is)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                for task in (entry / "task").iterdir():
                    found.add(os.stat(task / "ns" / "net").st_ino)
            except OSError:
                pass
    return found


def root_links_and_qdiscs() -> tuple[str, str]:
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True, check=True).stdout
    qdiscs = subprocess.run(["tc", "qdisc", "show"], capture_output=True, text=True, check=True).stdout
    return "\n".join(sorted(line.split(":")[1] for line in links.splitlines())), qdiscs


def wait_until_gone(namespaces: set[int], pids: list[int], seconds: float = 20.0) -> None:
    """Bounded wait for the kernel to reap killed processes and free their namespaces (liveness, not speed)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        alive = [p for p in pids if Path(f"/proc/{p}").exists() and "Z" not in _state(p)]
        if not alive and not namespaces & namespaces_in_use():
            return
        time.sleep(0.1)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "Z"


def test_without_root_or_tc_the_backend_is_refused_naming_the_field_and_the_fix(monkeypatch):
    caps = KernelCapabilities(root=False, ip=None, tc=None, problem="it needs root (network namespaces and tc)")
    monkeypatch.setattr(kernel, "kernel_capabilities", lambda: caps)
    with pytest.raises(ParameterError, match=r"network\.emulation: kernel cannot run here: it needs root") as err:
        check_kernel_backend("network.emulation")
    assert "emulation: userspace" in err.value.fix


def test_without_netem_the_run_says_which_qdisc_is_missing_and_where_delays_come_from():
    applied = KernelCapabilities(root=True, ip="ip", tc="tc", tbf=True, netem=False).applied()
    assert applied["userspace"] == ["delay", "jitter", "loss"] and "netem" in applied["missing"][0]
    assert "userspace" not in KernelCapabilities(root=True, ip="ip", tc="tc", tbf=True, netem=True).applied()


@needs_kernel
def test_a_kernel_network_shapes_with_tbf_and_leaves_nothing_when_closed():
    sweep()  # an earlier run's leftovers would free (and let the kernel reuse) namespace numbers mid-test
    before_ns, before_root = namespaces_in_use(), root_links_and_qdiscs()
    plan = plan_network(NetworkSpec.model_validate(SPEC), clients=2, seed=0)
    net = KernelNetwork.build(plan, "test", ("aggregator", "key_authority"))
    try:
        made = set(net.holder.inodes())
        assert len(made) == 5 and made <= namespaces_in_use() and not made & before_ns
        client = net.namespaces["client-0"]
        shown = subprocess.run(
            ["nsenter", f"--net={client}", "tc", "qdisc", "show", "dev", "eth0"], capture_output=True, text=True
        ).stdout
        assert "tbf" in shown and "rate 8Mbit" in shown
        # a bounded transfer from client-0 to the aggregator crosses the client's tbf
        server = net.addresses["aggregator"]
        listen = subprocess.Popen(
            ["nsenter", f"--net={net.namespaces['aggregator']}", sys.executable, "-c", _SINK, server],
            stdout=subprocess.PIPE,
            text=True,
        )
        with ended_at_exit(listen, signal.SIGKILL, grace_s=0):  # a failed transfer leaves no sink listening
            assert listen.stdout is not None and listen.stdout.readline().strip() == "listening"
            source = ["nsenter", f"--net={client}", sys.executable, "-c", _SOURCE, server]
            subprocess.run(source, check=True, timeout=60)
            assert listen.wait(timeout=60) == 0
        stats = subprocess.run(
            ["nsenter", f"--net={client}", "tc", "-s", "-j", "qdisc", "show", "dev", "eth0"],
            capture_output=True,
            text=True,
        ).stdout
        assert max(q.get("bytes", 0) for q in json.loads(stats)) >= 200_000
        assert net.setup().delays is not CAPS.netem  # no netem: delays from userspace
    finally:
        net.close()
    wait_until_gone(made, [net.holder.proc.pid])
    assert not made & namespaces_in_use()
    assert root_links_and_qdiscs() == before_root  # nothing was ever made in the machine's own namespace


_SINK = textwrap.dedent(
    """
    import socket, sys
    s = socket.create_server((sys.argv[1], 7777)); print("listening", flush=True)
    c, _ = s.accept(); got = 0
    while (b := c.recv(65536)): got += len(b)
    sys.exit(0 if got == 200_000 else 1)
    """
)
_SOURCE = "import socket, sys; socket.create_connection((sys.argv[1], 7777), timeout=30).sendall(b'x' * 200_000)"

_KILLED_RUN = textwrap.dedent(
    """
    import os, sys, time
    from hebench.links.plan import plan_network
    from hebench.net.shaping.kernel import KernelNetwork
    from hebench.net.shaping.scope import run_bound
    from hebench.config import NetworkSpec
    import multiprocessing as mp

    plan = plan_network(NetworkSpec.model_validate({"clients": {"uplink_mbit": 8}}), clients=1, seed=0)
    net = KernelNetwork.build(plan, "killed", ("aggregator",))
    party = mp.get_context("spawn").Process(target=run_bound, args=(net.setup(), "client-0", time.sleep, 600))
    party.start()
    inside = os.stat(net.namespaces["client-0"]).st_ino
    for _ in range(600):  # until the party has joined its namespace
        if os.stat(f"/proc/{party.pid}/ns/net").st_ino == inside:
            break
        time.sleep(0.1)
    print(net.holder.proc.pid, party.pid, *net.holder.inodes(), flush=True)
    time.sleep(600)
    """
)


@needs_kernel
def test_a_killed_run_leaves_no_namespace_veth_qdisc_or_process_behind():
    before_root = root_links_and_qdiscs()
    run = subprocess.Popen(
        [sys.executable, "-c", _KILLED_RUN], stdout=subprocess.PIPE, text=True, cwd=ROOT, env={**os.environ}
    )
    started: list = []
    try:
        assert run.stdout is not None
        holder, party, *inodes = (int(x) for x in run.stdout.readline().split())
        made = set(inodes)
        inside = os.stat(f"/proc/{party}/ns/net").st_ino in made  # the party is inside
        assert made <= namespaces_in_use() and inside
        started += descendants(run.pid)
        run.send_signal(signal.SIGKILL)  # no cleanup code runs in the killed run
        run.wait(timeout=30)
        wait_until_gone(made, [holder, party])
        assert not made & namespaces_in_use(), "a namespace outlived its killed run"
        assert not Path(f"/proc/{holder}").exists() or _state(holder) == "Z"
        assert not Path(f"/proc/{party}").exists() or _state(party) == "Z"
        assert root_links_and_qdiscs() == before_root
        sweep()  # the dead run's state file goes too
        assert not [p for p in kernel.STATE_DIR.glob(f"{run.pid}-*.json")]
    finally:  # a failed check leaves nothing running: the run, and what it started
        end_tree(run, signal.SIGKILL, grace_s=0, also=started)
        sweep()


@needs_kernel
def test_the_sweeper_ends_what_a_dead_run_left_holding_its_namespaces(tmp_path, monkeypatch):
    """A holder that outlived its run (its death signal lost) is found from the run's state file and ended."""
    monkeypatch.setattr(kernel, "STATE_DIR", tmp_path)
    holder = kernel._Holder.start(2, "orphan")
    made = set(holder.inodes())
    dead = subprocess.Popen(["true"])
    dead.wait()  # a pid whose process is gone: the run that "died"
    recorded = [[holder.proc.pid, kernel._start_ticks(holder.proc.pid)], [dead.pid, "0"]]  # and a gone party
    (tmp_path / f"{dead.pid}-orphan.json").write_text(json.dumps({"runner": [dead.pid, "0"], "processes": recorded}))
    alive = tmp_path / f"{os.getpid()}-alive.json"  # a live run's state is left alone
    me = [os.getpid(), kernel._start_ticks(os.getpid())]
    alive.write_text(json.dumps({"runner": me, "processes": [me]}))
    assert sweep() == [holder.proc.pid]  # the gone party's pid is not killed: its start time does not match
    holder.proc.wait(timeout=10)
    wait_until_gone(made, [holder.proc.pid])
    assert not made & namespaces_in_use()
    assert not (tmp_path / f"{dead.pid}-orphan.json").exists() and alive.exists()


@needs_kernel
@pytest.mark.slow
def test_a_kernel_backend_run_records_how_its_links_were_applied_and_leaves_nothing(tmp_path):
    from hebench.config import parse_suite
    from hebench.results import read_records
    from hebench.runtime.runner import Runner

    sweep()
    before_ns, before_root = namespaces_in_use(), root_links_and_qdiscs()
    suite = {
        "name": "kernel",
        "data": {"dataset": "digits", "clients": 2},
        "model": {"name": "mlp", "hidden": 4},
        "training": {"rounds": 1},
        "configurations": [
            {"mode": "raw"},
            # its decryptor is a helper party, and the key authority pushes it a 1.6 MB secret set it reads only
            # when the first aggregate arrives: without its namespace and deep send buffers the run hung
            *([{"mode": "decryptor-he", "adapter": "tenseal-ckks"}] if "tenseal-ckks" in INSTALLED else []),
        ],
        "network": {**SPEC, "emulation": "kernel"},
        "measure": {"setup_timeout_s": 120},
    }
    Runner(parse_suite(suite), tmp_path).run()
    rows = [r.to_json() for r in read_records(tmp_path / "results.jsonl").records]
    config = next(r for r in rows if r["kind"] == "configuration")
    assert config["network"]["emulation"] == "kernel"
    if not CAPS.netem:
        assert config["network"]["applied"]["userspace"] == ["delay", "jitter", "loss"]
    clients = [r for r in rows if r["kind"] == "party_round" and r["role"] == "client"]
    assert len(clients) == 2 * len(suite["configurations"]) and all(
        r["network"]["up_bytes"] == r["bytes_sent"] > 0 for r in clients
    )
    wait_until_gone(namespaces_in_use() - before_ns, [])
    assert namespaces_in_use() <= before_ns | {os.stat("/proc/self/ns/net").st_ino}
    assert root_links_and_qdiscs() == before_root


@pytest.mark.parametrize(
    ("configuration", "helpers"),
    [
        ({"mode": "raw"}, ()),
        ({"mode": "secret-sharing", "params": {"aggregators": 3}}, ("aggregator-1", "aggregator-2")),
        ({"mode": "decryptor-he", "adapter": "tenseal-ckks"}, ("aggregator-1",)),  # its decryptor
    ],
)
def test_every_server_side_party_gets_its_own_namespace(monkeypatch, configuration, helpers):
    """A helper process the runtime starts without a namespace stays in the machine's own and cannot reach
    the parties inside theirs (decryptor-he's decryptor could not dial the key authority)."""
    from hebench.config import parse_suite
    from hebench.runtime.local.network import prepare

    built: list[tuple[str, ...]] = []

    class Built:
        def setup(self):
            return None

        close = register = setup

    def build(plan, run_id, servers):
        built.append(tuple(servers))
        return Built()

    monkeypatch.setattr(KernelNetwork, "build", staticmethod(build))
    suite = parse_suite(
        {
            "name": "k",
            "data": {"dataset": "digits", "clients": 2},
            "configurations": [configuration],
            "network": {**SPEC, "emulation": "kernel"},
        }
    )
    prepare(suite, suite.configurations[0], 2, "run")
    assert built == [("aggregator", *helpers, "key_authority")]


# Flower's deployment engine on kernel links: each process in its party's namespace.

FLOWER_SUITE = {
    "name": "flower-kernel",
    "data": {"dataset": "digits", "clients": 2},
    "model": {"name": "mlp", "hidden": 4},
    "training": {"rounds": 2},
    "configurations": [{"mode": "raw"}],
    "network": {"clients": {"profile": "home-broadband"}, "emulation": "kernel"},
    "measure": {"setup_timeout_s": 120},
}


def test_flower_takes_kernel_links_and_refuses_in_one_line_what_it_cannot_shape(monkeypatch):
    from hebench.config import parse_suite
    from hebench.runtime.local.network import check_networks

    monkeypatch.setattr(kernel, "kernel_capabilities", lambda: KernelCapabilities(True, "ip", "tc", tbf=True))
    on = lambda emulation: parse_suite({**FLOWER_SUITE, "network": {**SPEC, "emulation": emulation}})  # noqa: E731
    check_networks(on("kernel"), "flower")  # each Flower process in its party's namespace
    with pytest.raises(ParameterError, match="one Ray process, which cannot be placed in per-party") as err:
        check_networks(on("kernel"), "flower-sim")
    assert "--engine flower with emulation: kernel" in err.value.fix
    for emulation in ("userspace", "model"):
        with pytest.raises(ParameterError, match=f"{emulation} links are applied inside hebench's own channels"):
            check_networks(on(emulation), "flower")


def test_a_flower_run_without_netem_records_that_its_links_get_rates_only(monkeypatch):
    from hebench.config import parse_suite
    from hebench.runtime.local.network import network_record

    monkeypatch.setattr(kernel, "kernel_capabilities", lambda: KernelCapabilities(True, "ip", "tc", tbf=True))
    s = parse_suite({**FLOWER_SUITE, "network": {**SPEC, "emulation": "kernel"}})
    applied = network_record(s, s.configurations[0], 2, "flower")["applied"]
    assert applied["kernel"] == ["rate (tbf)"] and "userspace" not in applied  # no userspace delays on Flower
    missing = applied["missing"][0]
    assert "Flower's traffic" in missing and "delay, jitter and loss are not applied" in missing
    assert "userspace" in network_record(s, s.configurations[0], 2)["applied"]  # the local runtime's, unchanged


def test_a_placed_flower_process_runs_in_its_namespace_as_the_first_process_of_its_own_pid_namespace():
    from hebench.runtime.flower.federation import Placement

    argv = Placement({"client-0": "/proc/9/task/10/ns/net"}, {"client-0": "10.201.0.2"}).argv("client-0", ["x"])
    assert argv[:2] == ["nsenter", "--net=/proc/9/task/10/ns/net"] and argv[-1] == "x"
    assert {"--pid", "--fork", "--kill-child"} <= set(argv)  # its children die with it, also when killed


def _cmdline(proc: Path) -> str:
    try:
        return (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _flower_processes(namespaces: set[int]) -> dict[int, tuple[str, int]]:
    """Flower's processes (and their wrappers) in ``namespaces``: pid -> (command line, namespace); other runs'
    on this machine are not."""
    out = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            cmd = _cmdline(entry)
            try:
                inode = os.stat(entry / "ns" / "net").st_ino
            except OSError:
                continue
            if inode in namespaces and ("flower-" in cmd or "flwr" in cmd):
                out[int(entry.name)] = (cmd, inode)
    return out


@needs_kernel
@pytest.mark.slow
def test_a_flower_run_on_kernel_links_places_every_process_and_leaves_nothing(tmp_path):
    from hebench.config import parse_suite
    from hebench.results import read_records
    from hebench.runtime.flower.runner import FlowerRuntime
    from hebench.runtime.runner import Runner

    sweep()
    before_ns, before_root = namespaces_in_use(), root_links_and_qdiscs()
    Runner(parse_suite(FLOWER_SUITE), tmp_path, runtime=FlowerRuntime()).run()
    rows = [r.to_json() for r in read_records(tmp_path / "results.jsonl").records]
    config = next(r for r in rows if r["kind"] == "configuration")
    assert config["runtime"] == "flower" and config["network"]["emulation"] == "kernel"
    assert config["network"]["applied"]["kernel"][0] == "rate (tbf)"
    if not CAPS.netem:
        assert "delay, jitter and loss are not applied" in config["network"]["applied"]["missing"][0]
    clients = [r for r in rows if r["kind"] == "party_round" and r["role"] == "client"]
    assert len(clients) == 2 * 2
    logs = tmp_path / "flower-federation" / "raw" / "logs"
    assert "https://10.201.0.1:" in (logs / "superlink.log").read_text()  # the aggregator's namespace address
    wait_until_gone(namespaces_in_use() - before_ns, [])
    assert namespaces_in_use() <= before_ns | {os.stat("/proc/self/ns/net").st_ino}
    assert root_links_and_qdiscs() == before_root
    assert not [p for p in Path("/proc").iterdir() if p.name.isdigit() and str(tmp_path) in _cmdline(p)]
    assert not list(kernel.STATE_DIR.glob(f"{os.getpid()}-*.json"))


@needs_kernel
@pytest.mark.slow
def test_a_killed_flower_run_leaves_no_namespace_veth_qdisc_or_flower_process_behind(tmp_path):
    sweep()
    before_ns, before_root = namespaces_in_use(), root_links_and_qdiscs()
    (tmp_path / "s.yaml").write_text(json.dumps(FLOWER_SUITE))
    argv = [sys.executable, "-m", "hebench", "run", str(tmp_path / "s.yaml"), "--engine", "flower"]
    run = subprocess.Popen([*argv, "--out", str(tmp_path / "run"), "--no-report"], cwd=ROOT, env={**os.environ})
    started: list = []
    try:
        log = tmp_path / "run" / "flower-logs" / "raw.log"
        deadline = time.monotonic() + 180  # liveness bound: the first round has started on Flower
        while time.monotonic() < deadline and "ROUND 1" not in (log.read_text() if log.exists() else ""):
            assert run.poll() is None, "the Flower run ended before it could be killed"
            time.sleep(0.5)
        # SuperLink, SuperNodes, flwr run, their children
        placed = _flower_processes(namespaces_in_use() - before_ns)
        made = {inode for _, inode in placed.values()}  # the run's namespaces (not other runs')
        commands = " ".join(cmd for cmd, _ in placed.values())
        assert "flower-superlink" in commands and commands.count("flower-supernode --superlink 10.201.") >= 2
        started += descendants(run.pid)
        run.send_signal(signal.SIGKILL)  # no cleanup code runs in the killed run
        run.wait(timeout=30)
        wait_until_gone(made, sorted(placed))
        assert not made & namespaces_in_use(), "a namespace outlived its killed Flower run"
        left = [p for p in placed if Path(f"/proc/{p}").exists() and _state(p) != "Z"]  # also the Flower children
        assert not left, f"Flower processes outlived the killed run: {left}"
        assert root_links_and_qdiscs() == before_root
        sweep()
        assert not list(kernel.STATE_DIR.glob(f"{run.pid}-*.json"))
    finally:  # a failed check leaves nothing running: the run, and what it started
        end_tree(run, signal.SIGKILL, grace_s=0, also=started)
        sweep()
