"""A Flower federation described by a folder, and a local one on loopback for trying hebench on Flower.

``federation.json`` names the SuperLink, its TLS root certificate, the nodes'
hub credential file and, for offload, each node's engine. ``hebench flower
up`` writes such a folder and starts the processes: one SuperLink, N
SuperNodes (partition i of N, runtime dependency installation off) and, with
engines, one offload engine beside each SuperNode.

On the kernel backend (:class:`Placement`), each process starts inside its party's network namespace: the
SuperLink in the aggregator's, each SuperNode and its engine in its client's; the certificates name the
namespace addresses, and the port checks run inside the namespace they check.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from hebench.errors import PartyError
from hebench.runtime.flower.hub_wire import HUB_ROLE

FILE = "federation.json"
CONNECTION = "hebench"  # the SuperLink connection's name in the federation's Flower config
GRACE_S = 10.0  # how long stopped processes have to exit before SIGKILL


@dataclass(frozen=True)
class Federation:
    folder: str
    superlink: str  # HOST:PORT of the SuperLink's Control API
    root_certificates: str | None  # None: insecure (no TLS)
    nodes: int
    client_key: str  # the nodes' hub credential (node-local)
    hub_host: str = "127.0.0.1"  # where the driver's hub listens; SuperNodes must reach it
    hub_ports: tuple[int, int] = (0, 0)  # (server door, client door); 0: any free port
    hub_tls_dir: str | None = None  # hub.pem, hub-key.pem, ca.pem (`hebench flower certs`); required off loopback
    engines: tuple[str, ...] = ()
    engine_tls_dir: str | None = None
    auth: bool = False

    @property
    def flwr_home(self) -> Path:
        return Path(self.folder) / "flwr-home"

    def save(self) -> None:
        (Path(self.folder) / FILE).write_text(json.dumps(asdict(self), indent=2))
        home = self.flwr_home
        home.mkdir(parents=True, exist_ok=True)
        tls = f'root-certificates = "{self.root_certificates}"' if self.root_certificates else "insecure = true"
        (home / "config.toml").write_text(
            f'[superlink]\ndefault = "{CONNECTION}"\n\n[superlink.{CONNECTION}]\naddress = "{self.superlink}"\n{tls}\n'
        )

    @classmethod
    def load(cls, folder: Path) -> Federation:
        path = folder / FILE
        try:
            raw = json.loads(path.read_text())
        except FileNotFoundError:
            raise PartyError(
                f"{path} does not exist", "start a federation with `hebench flower up DIR` and pass --federation DIR"
            ) from None
        except json.JSONDecodeError as err:
            raise PartyError(f"{path} is not valid JSON: {err}", "recreate it with `hebench flower up`") from None
        raw["engines"] = tuple(raw.get("engines", ()))
        raw["hub_ports"] = tuple(raw.get("hub_ports", (0, 0)))
        try:
            return cls(**raw)
        except TypeError as err:
            raise PartyError(
                f"{path} does not describe a federation: {err}", "recreate it with `hebench flower up`"
            ) from None

    @property
    def hub_ca(self) -> str | None:
        return str(Path(self.hub_tls_dir) / "ca.pem") if self.hub_tls_dir else None

    def node_config(self, index: int) -> str:
        """A SuperNode's ``--node-config``: its partition and the node-local secrets and trust anchors."""
        config = f"partition-id={index} num-partitions={self.nodes} hebench-credential='{self.client_key}'"
        if self.hub_ca:
            config += f" hebench-hub-ca='{self.hub_ca}'"
        if self.engines:
            config += f" hebench-engine='{self.engines[index]}' hebench-engine-tls='{self.engine_tls_dir}'"
        return config

    def env(self) -> dict[str, str]:
        """Flower's processes: this federation's config, no telemetry, no update check (offline machines), and
        this interpreter's scripts first on PATH (the SuperLink and SuperNodes start ``flower-superexec`` by name)."""
        quiet = {"FLWR_TELEMETRY_ENABLED": "0", "FLWR_DISABLE_UPDATE_CHECK": "1"}
        return {**os.environ, **quiet, "FLWR_HOME": str(self.flwr_home), "PATH": scripts_first_path()}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass(frozen=True)
class Placement:
    """Where a loopback federation's processes run on the kernel backend: each party's namespace (a
    ``/proc/PID/ns/net`` path) and address, and ``register`` to record each started process for the sweeper."""

    namespaces: dict[str, str]
    addresses: dict[str, str]
    register: Callable[[int], None] = lambda pid: None

    def argv(self, party: str, argv: list[str]) -> list[str]:
        """``argv`` run inside ``party``'s namespace, as PID 1 of a PID namespace of its own: Flower's processes
        start theirs (SuperExec, ServerApp, ClientApp) in new sessions, beyond any death signal, and the kernel
        ends a PID namespace's every process when its first one dies, which ``unshare --kill-child`` makes happen
        when ``unshare`` (the started process, dying with the run) does."""
        pid_namespace = ["unshare", "--pid", "--fork", "--kill-child", "--mount-proc"]
        return ["nsenter", f"--net={self.namespaces[party]}", *pid_namespace, *argv]

    def hosts(self) -> tuple[str, ...]:
        """The names every certificate carries: loopback and each namespace's address."""
        return ("127.0.0.1", "localhost", *self.addresses.values())


def in_namespace(namespace: str | None, probe: Callable[[], bool]) -> bool:
    """``probe()`` run in a thread inside ``namespace`` (the calling thread's namespace when None)."""
    if namespace is None:
        return probe()
    from hebench.net.shaping.scope import enter_namespace

    answer: list[bool] = [False]

    def inside() -> None:
        enter_namespace(namespace, "a port check")
        answer[0] = probe()

    thread = threading.Thread(target=inside, daemon=True)
    thread.start()
    thread.join()
    return answer[0]


def wait_for_port(
    port: int,
    what: str,
    proc: subprocess.Popen,
    log: Path,
    timeout_s: float = 60.0,
    host: str = "127.0.0.1",
    namespace: str | None = None,
) -> None:
    """Wait until ``host:port`` accepts connections, checked from inside ``namespace`` (kernel backend)."""

    def listening() -> bool:
        with socket.socket() as s:
            return s.connect_ex((host, port)) == 0

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise PartyError(f"{what} exited with code {proc.returncode}: {tail(log)}", f"see {log}")
        if in_namespace(namespace, listening):
            return
        time.sleep(0.2)
    raise PartyError(f"{what} did not listen on {host}:{port} within {timeout_s:.0f} s", f"see {log}")


def tail(log: Path, lines: int = 8) -> str:
    try:
        return " | ".join(log.read_text(errors="replace").strip().splitlines()[-lines:])
    except OSError:
        return "(no log)"


def write_node_keys(folder: Path, index: int) -> tuple[Path, Path]:
    """A SuperNode's authentication key pair in OpenSSH format (NIST P-384), as ``flower-supernode`` reads it."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP384R1())
    private, public = folder / f"node-{index}.key", folder / f"node-{index}.pub"
    private.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, serialization.NoEncryption())
    )
    private.chmod(0o600)
    public.write_bytes(
        key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    )
    return private, public


@dataclass
class LocalFederation:
    """Processes of a loopback federation; ``stop()`` ends them all (each in its own process group)."""

    federation: Federation
    procs: list[tuple[str, subprocess.Popen]] = field(default_factory=list)
    placement: Placement | None = None  # kernel backend: each process in its party's namespace

    @property
    def folder(self) -> Path:
        return Path(self.federation.folder)

    def spawn(
        self, name: str, argv: list[str], env: dict[str, str], party: str | None = None
    ) -> tuple[subprocess.Popen, Path]:
        """Start one process (in ``party``'s namespace on the kernel backend), logging to ``logs/NAME.log``; the
        kernel kills it when this process dies, even by SIGKILL (where no ``stop()`` can run)."""
        logs = self.folder / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        log = logs / f"{name}.log"
        placed = self.placement is not None and party is not None
        if placed:
            assert self.placement is not None and party is not None
            argv = self.placement.argv(party, argv)
        from hebench.net.shaping.scope import die_with_parent  # imported here: the child only calls it

        with log.open("ab") as out:
            proc = subprocess.Popen(
                argv,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
                preexec_fn=die_with_parent,  # only sets a death signal: a killed command leaves none behind
            )
        self.procs.append((name, proc))
        if placed:
            assert self.placement is not None
            self.placement.register(proc.pid)
        return proc, log

    def party_argv(self, party: str, argv: list[str]) -> list[str]:
        """``argv`` in ``party``'s namespace (kernel backend), or unchanged (loopback)."""
        return argv if self.placement is None else self.placement.argv(party, argv)

    def start_supernode(
        self, index: int, key: Path | None = None, name: str | None = None
    ) -> tuple[subprocess.Popen, Path]:
        fed = self.federation
        argv = [console_script("flower-supernode"), "--superlink", fed.superlink, "--port", str(free_port())]
        argv += ["--root-certificates", fed.root_certificates] if fed.root_certificates else ["--insecure"]
        if key is not None:
            argv += ["--auth-supernode-private-key", str(key)]
        argv += ["--node-config", fed.node_config(index)]
        return self.spawn(name or f"supernode-{index}", argv, fed.env(), party=f"client-{index}")

    def register(self, public_key: Path) -> None:
        """Add a node's public key to the SuperLink's allow list (authentication on)."""
        result = subprocess.run(
            self.party_argv(
                "aggregator", [console_script("flwr"), "supernode", "register", str(public_key), CONNECTION]
            ),
            env=self.federation.env(),
            capture_output=True,
            text=True,
            timeout=60,
        )
        if result.returncode != 0:
            raise PartyError(
                f"registering {public_key.name} failed: {(result.stdout + result.stderr).strip()[-400:]}",
                "see the SuperLink log",
            )

    def exited(self) -> list[str]:
        """The names of the processes that have exited."""
        return [name for name, proc in self.procs if proc.poll() is not None]

    def stop(self, grace_s: float = GRACE_S) -> None:
        """End every process with what it started: SIGTERM to each one's process group, then, after one grace
        period for them all (not one each: 7 processes would take 70 s), SIGKILL to every group, which also ends
        what an exited process left in its group."""
        for _, proc in reversed(self.procs):
            _signal_group(proc, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        for _, proc in self.procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        for _, proc in self.procs:
            _signal_group(proc, signal.SIGKILL)  # a group with no process left: nothing happens
            proc.wait(timeout=5)

    def __enter__(self) -> LocalFederation:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _signal_group(proc: subprocess.Popen, signum: int) -> None:
    """``signum`` to ``proc``'s process group (it leads one: started in a session of its own). A group id is not
    reused while any process is in the group, and the kernel hands out pids in order, so a group emptied within
    the grace period is not some other program's."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signum)


def ends_federation(name: str) -> bool:
    """Whether process ``name``'s exit ends a loopback federation: the SuperLink's, or client 0's SuperNode's or
    engine's (client 0 evaluates every global model). Any other SuperNode (or its engine) that dies is its client's
    dropout: a run on the federation goes on without that client
    (:class:`~hebench.runtime.flower.strategy.HEFedAvg`)."""
    return name in ("superlink", "supernode-0", "engine-0")


def console_script(name: str) -> str:
    """A console script of this interpreter's environment (Flower's, hebench's)."""
    candidate = Path(sys.executable).parent / name
    return str(candidate) if candidate.exists() else name


def scripts_first_path() -> str:
    """PATH with this interpreter's scripts folder first: a virtualenv's hebench run by its full path, without
    the environment activated, still finds the Flower executables installed beside it."""
    scripts = str(Path(sys.executable).parent)
    rest = [p for p in os.environ.get("PATH", os.defpath).split(os.pathsep) if p and p != scripts]
    return os.pathsep.join([scripts, *rest])


def start_local_federation(
    folder: Path,
    nodes: int,
    tls: bool = True,
    auth: bool = False,
    engines: bool = False,
    placement: Placement | None = None,
) -> LocalFederation:
    """Start a SuperLink, ``nodes`` SuperNodes and (``engines``) an offload engine per node, on loopback, or
    with ``placement`` each in its party's namespace (SuperLink: the aggregator's; node i, engine i: client-i's)."""
    from hebench.net.certs import make_certificates

    server = placement.addresses["aggregator"] if placement else "127.0.0.1"
    hosts = placement.hosts() if placement else ("127.0.0.1", "localhost")
    engine_host = (lambda i: placement.addresses[f"client-{i}"]) if placement else (lambda i: "127.0.0.1")
    agg_ns = placement.namespaces["aggregator"] if placement else None
    folder = folder.resolve()
    folder.mkdir(parents=True, exist_ok=True)
    client_key = folder / "client.key"
    client_key.write_text(secrets.token_hex(32))
    client_key.chmod(0o600)
    port = free_port()
    root = None
    if tls:
        make_certificates(folder / "superlink-tls", hosts=0, server_hosts=hosts, server_role="superlink")
        root = str(folder / "superlink-tls" / "ca.pem")
    make_certificates(folder / "hub-tls", hosts=0, server_hosts=hosts, server_role=HUB_ROLE)
    engine_tls = str(folder / "engine-tls") if engines else None
    if engine_tls:
        make_certificates(Path(engine_tls), hosts=nodes, server_hosts=hosts)
    engine_ports = [free_port() for _ in range(nodes)] if engines else []
    fed = Federation(
        folder=str(folder),
        superlink=f"{server}:{port}",
        root_certificates=root,
        nodes=nodes,
        client_key=str(client_key),
        hub_host=server,  # the run's hub listens in the aggregator's namespace too
        hub_tls_dir=str(folder / "hub-tls"),
        engines=tuple(f"{engine_host(i)}:{p}" for i, p in enumerate(engine_ports)),
        engine_tls_dir=engine_tls,
        auth=auth,
    )
    fed.save()
    local = LocalFederation(fed, placement=placement)
    try:
        argv = [console_script("flower-superlink"), "--port", str(port), "--disable-runtime-dependency-installation"]
        if placement is not None:  # listen on the aggregator's namespace address, which the nodes dial
            argv += ["--host", server]
        if tls:
            certs = folder / "superlink-tls"
            argv += ["--ssl-certfile", str(certs / "superlink.pem"), "--ssl-keyfile", str(certs / "superlink-key.pem")]
            argv += ["--ssl-ca-certfile", str(certs / "ca.pem")]
        else:
            argv += ["--insecure"]
        if auth:
            argv += ["--enable-supernode-auth"]
        proc, log = local.spawn("superlink", argv, fed.env(), party="aggregator")
        wait_for_port(port, "the SuperLink", proc, log, host=server, namespace=agg_ns)
        for i, engine_port in enumerate(engine_ports):
            assert engine_tls is not None
            tls_args = [f"--tls-cert={engine_tls}/engine-{i}.pem", f"--tls-key={engine_tls}/engine-{i}-key.pem"]
            listen = f"{engine_host(i)}:{engine_port}"
            argv = [sys.executable, "-m", "hebench", "engine", "serve", "--listen", listen]
            argv += [*tls_args, f"--tls-ca={engine_tls}/ca.pem"]
            proc, log = local.spawn(f"engine-{i}", argv, os.environ.copy(), party=f"client-{i}")
            client_ns = placement.namespaces[f"client-{i}"] if placement else None
            wait_for_port(engine_port, f"engine {i}", proc, log, host=engine_host(i), namespace=client_ns)
        for i in range(nodes):
            key = None
            if auth:
                key, public = write_node_keys(folder, i)
                local.register(public)
            local.start_supernode(i, key)
    except BaseException:
        local.stop()
        raise
    return local
