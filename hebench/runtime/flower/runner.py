"""``hebench run SUITE --engine flower``: the Flower runtime, each configuration a run on a federation.

The runtime starts the run's hub (key authority and record sink) as a local
process, submits hebench's Flower App with ``flwr run``, and writes what the
ServerApp and the nodes' mods report as the same JSON-lines records as local
runs, marked ``runtime: flower``. Without a federation folder it starts a
loopback one (TLS on) for the duration of the run.

With ``network.emulation: kernel`` each configuration gets its own loopback
federation inside the configuration's namespaces: the SuperLink, the hub and
``flwr run`` in the aggregator's, each SuperNode (and its engine) in its
client's, every veth shaped by ``tbf`` (and ``netem`` where the kernel has it).
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import queue
import secrets
import subprocess
import time
from collections.abc import Callable, Iterator
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from hebench.config import Configuration, MeasureSpec, Suite
from hebench.errors import ParameterError, PartyError, SuiteError
from hebench.fl.allowance import allowance_for
from hebench.fl.party import Credentials, PartyContext, party_main
from hebench.net.address import parse_address
from hebench.net.shaping.scope import ShapingSetup, die_with_parent, run_placed
from hebench.results.records import FlowerRunRecord, Record
from hebench.results.run_folder import RunFolder, safe_label
from hebench.runtime.base import ConfigurationRun, Started, Supervised
from hebench.runtime.flower.app_files import write_app, write_run_config
from hebench.runtime.flower.federation import (
    CONNECTION,
    Federation,
    LocalFederation,
    Placement,
    console_script,
    start_local_federation,
    tail,
)
from hebench.runtime.flower.hub import HubSettings, run_hub
from hebench.runtime.flower.plan import FlowerPlan


class FlowerProcess:
    """``flwr run`` seen as a party: it may end only after the last round's records arrived."""

    GRACE_S = 10.0

    def __init__(self, popen: subprocess.Popen, log: Path) -> None:
        self.popen, self.log = popen, log
        self._ended_at: float | None = None

    @property
    def exitcode(self) -> int | None:
        code = self.popen.poll()
        if code is None:
            return None
        self._ended_at = self._ended_at or time.monotonic()
        return None if time.monotonic() - self._ended_at < self.GRACE_S else (code or 1)

    def join(self, timeout: float | None = None) -> None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(timeout)

    def is_alive(self) -> bool:
        return self.popen.poll() is None

    def terminate(self) -> None:
        self.popen.terminate()


class FlowerRuntime:
    """Each configuration as a Flower run: the run's hub (key authority, record sink) and ``flwr run``."""

    name = "flower"
    supports_resume = False  # a Flower run cannot restart mid-way from hebench's checkpoints

    def __init__(self, federation: Federation | None = None) -> None:
        self.federation = federation
        self.per_configuration = False  # kernel links: a federation per configuration, in its namespaces

    @contextlib.contextmanager
    def session(self, suite: Suite, run_dir: Path, note: Callable[[str], None]) -> Iterator[None]:
        """Use the given federation, or start a loopback one (TLS on) for the whole suite; with kernel links, one
        per configuration, in that configuration's namespaces."""
        refuse_unfit_faults(suite)
        kernel = [c.label for c in suite.configurations if _kernel_links(suite, c)]
        if kernel and self.federation is not None:
            raise ParameterError(
                f"network.emulation: kernel ({', '.join(kernel[:3])}) places a loopback federation's processes in "
                "network namespaces; a federation given with --federation runs elsewhere and cannot be shaped",
                "run without --federation (hebench starts the federation), or leave network out of the suite",
            )
        if kernel:
            from hebench.net.shaping.kernel import kernel_capabilities

            if not kernel_capabilities().netem:
                note("flower: no netem here, links get rates only (no delay, jitter, loss)")
            self.per_configuration = True
            try:
                yield
            finally:
                self.per_configuration = False
            return
        if self.federation is not None:
            yield
            return
        engines = any(c.spec.needs_engines for c in suite.configurations)
        note("flower: starting a loopback federation")
        local = start_local_federation(
            RunFolder(run_dir).flower_federation, suite.data.clients, tls=True, engines=engines
        )
        self.federation = local.federation
        try:
            yield
        finally:
            self.federation = None
            local.stop()

    def configuration_fields(self) -> dict[str, Any]:
        if self.per_configuration:
            return {"runtime": "flower", "superlink": "per configuration, in the aggregator's namespace"}
        assert self.federation is not None
        return {"runtime": "flower", "superlink": self.federation.superlink}

    def start(self, run: ConfigurationRun, control_recv: Callable[[Any, str, Started], Any]) -> Started:
        if not self.per_configuration:
            return self._start(run, control_recv, None)
        network, local = start_placed_federation(run)
        try:
            self.federation = local.federation
            started = self._start(run, control_recv, network.setup)
        except BaseException:
            local.stop()
            network.close()
            raise
        finally:
            self.federation = None
        for party in started.parties.values():  # the hub and ``flwr run``: the sweeper ends them should the run die
            network.register(getattr(party, "pid", None) or party.popen.pid)
        stop_parties = started.stop

        def stop() -> None:
            try:
                stop_parties()
            finally:
                local.stop()
                network.close()

        started.stop = stop
        return started

    def _start(
        self, run: ConfigurationRun, control_recv: Callable[[Any, str, Started], Any], setup: ShapingSetup | None
    ) -> Started:
        suite, config, fed = run.suite, run.config, self.federation
        assert fed is not None
        if fed.nodes != suite.data.clients:
            raise PartyError(
                f"the federation has {fed.nodes} SuperNodes, the suite {suite.data.clients} clients",
                f"set --set data.clients={fed.nodes}, or start a federation with --nodes {suite.data.clients}",
            )
        if config.spec.needs_engines and len(fed.engines) != fed.nodes:
            raise PartyError(
                f"'{config.label}' is {config.mode}, but the federation has no engine per SuperNode",
                "start the federation with `hebench flower up --engines`",
            )
        started, parent, ctx = start_hub(run, _describe_exit, setup)
        try:
            settings = HubSettings(
                client_key=_read_key(Path(fed.client_key)),
                host=fed.hub_host,
                ports=fed.hub_ports,
                tls_dir=fed.hub_tls_dir,
                engines=tuple(parse_address(e, "federation engine") for e in fed.engines)
                if config.spec.needs_engines
                else (),
                engine_tls_dir=fed.engine_tls_dir,
            )
            parent.send(settings)
            doors = control_recv(parent, "hub", started)
            hub_ca = Path(fed.hub_ca).read_text() if fed.hub_ca else None
            plan = plan_for(run, ctx, doors, hub_ca)
            folder = RunFolder(run.run_dir)
            app = write_app(folder.flower_app)
            assert ctx.credentials.hub is not None
            overrides = write_run_config(folder.flower_run_config(config.label), plan, ctx.credentials.hub)
            log = folder.ensure(folder.flower_log(config.label))
            with log.open("ab") as out:
                argv = [console_script("flwr"), "run", str(app), CONNECTION, "--run-config", str(overrides), "--stream"]
                if setup is not None:  # the SuperLink's Control API listens in the aggregator's namespace
                    argv = Placement(setup.namespaces, setup.addresses).argv("aggregator", argv)
                popen = subprocess.Popen(
                    argv,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    env=fed.env(),
                    start_new_session=True,
                    preexec_fn=die_with_parent if setup is not None else None,  # only sets a death signal
                )
            flwr = FlowerProcess(popen, log)
            started.parties["flwr run"] = flwr
            started.finish = lambda write: finish(flwr, flwr.log, started.records, write, config.label, suite.measure)
        except BaseException:
            started.stop()
            raise
        return started


def refuse_unfit_faults(suite: Suite) -> None:
    """Faults apply on Flower as on the local runtime (:mod:`hebench.runtime.flower.client_mod`), except one case: a
    node tells it is late against ``training.round_deadline_s`` from its compute alone, so with shaped links
    (whose upload time the local runtime adds) the deadline would miss what the link takes: refused."""
    shaped = [c.label for c in suite.configurations if suite.network_for(c) is not None]
    if suite.training.round_deadline_s is not None and shaped:
        raise SuiteError(
            f"training.round_deadline_s on Flower counts a node's compute only, not its upload on the links of "
            f"{', '.join(shaped[:3])}",
            "run the suite on the local runtime (it adds each upload's link time), or leave round_deadline_s out",
        )


def _kernel_links(suite: Suite, config: Configuration) -> bool:
    spec = suite.network_for(config)
    return spec is not None and spec.emulation == "kernel"


def start_placed_federation(run: ConfigurationRun) -> tuple[Any, LocalFederation]:
    """A configuration's namespaces (aggregator and clients; the hub is the key authority, in the aggregator's)
    and a loopback federation started inside them. Returns the network (``setup``, ``close``) and the federation."""
    from hebench.runtime.local.network import ConfigurationNetwork, network_plan

    suite, config = run.suite, run.config
    folder = RunFolder(run.run_dir).flower_federation / safe_label(config.label)
    plan = network_plan(suite, config, suite.data.clients)
    if plan is None:  # a configuration without links in a suite with kernel links: its own unshaped federation
        return ConfigurationNetwork(), start_local_federation(
            folder, suite.data.clients, tls=True, engines=config.spec.needs_engines
        )
    from hebench.net.shaping.kernel import KernelNetwork

    kernel = KernelNetwork.build(plan, secrets.token_hex(4), ("aggregator",))
    setup = kernel.setup()
    # Flower's processes are not hebench's: no userspace delays anywhere (the hub's channels included), so that
    # every party sees the same links; without netem those delays are missing, and the records say so
    setup = ShapingSetup(setup.plan, pace=False, delays=False, namespaces=setup.namespaces, addresses=setup.addresses)
    network = ConfigurationNetwork(setup, kernel.close, kernel.register)
    try:
        placement = Placement(setup.namespaces, setup.addresses, kernel.register)
        local = start_local_federation(
            folder, suite.data.clients, tls=True, engines=config.spec.needs_engines, placement=placement
        )
    except BaseException:
        kernel.close()
        raise
    return network, local


def start_hub(
    run: ConfigurationRun,
    describe_exit: Callable[[str, int], tuple[str, str]],
    setup: ShapingSetup | None = None,
) -> tuple[Started, Connection, PartyContext]:
    """The run's hub process (key authority and record sink), waiting for its :class:`HubSettings` on the pipe;
    with ``setup`` (kernel links) in the aggregator's namespace.

    ``ctx.credentials.hub`` is the server door's credential. The returned ``stop`` ends every other
    party the caller adds to ``started.parties`` (``flwr run``, the simulation), then the hub.
    """
    creds = Credentials(hub=secrets.token_bytes(32))  # the hub's server door
    ctx = PartyContext(
        suite=run.suite,
        config=run.config,
        run_dir=run.run_dir,
        credentials=creds,
        run_id=secrets.token_hex(8),
        start_round=0,
        input_shape=run.data.input_shape,
        num_classes=run.data.num_classes,
        # what the engines may decrypt for their nodes (the hub hands it to them with the key sets)
        allowance=allowance_for(run.suite, run.config, run.data.input_shape, run.data.num_classes, 0)
        if run.config.spec.needs_engines
        else None,
    )
    spawn = mp.get_context("spawn")
    started = Started(records=spawn.Queue(), describe_exit=describe_exit)
    parent, child = spawn.Pipe()
    args = (setup, "aggregator", party_main, "hub", run_hub, ctx, child, started.records)
    hub = spawn.Process(target=run_placed, args=args, name="hub", daemon=True)
    hub.start()
    started.parties["hub"] = hub

    def stop() -> None:
        for name, party in started.parties.items():
            if name != "hub" and party.is_alive():
                party.terminate()
        with contextlib.suppress(OSError, BrokenPipeError):
            parent.send("stop")
        hub.join(timeout=10)
        if hub.is_alive():
            hub.terminate()
        started.records.close()

    started.stop = stop
    return started, parent, ctx


def plan_for(
    run: ConfigurationRun, ctx: PartyContext, doors: dict[str, tuple[str, int]], hub_ca: str | None = None
) -> FlowerPlan:
    """The Flower plan of ``run``'s configuration, its hub at ``doors`` (as the hub answered)."""
    index = run.suite.configurations.index(run.config)
    return FlowerPlan(
        run.suite, index, ctx.run_id, doors["server"], doors["client"], str(run.run_dir.resolve()), hub_ca
    )


def _describe_exit(name: str, code: int) -> tuple[str, str]:
    return (
        (f"{name} exited with code {code}", "see the message above")
        if name != "flwr run"
        else ("the Flower run ended before its last round", "see the flower-logs folder and the federation's logs")
    )


def finish(
    party: Supervised, log: Path, records: Any, write: Callable[[Record], Any], label: str, measure: MeasureSpec
) -> None:
    """After the last round: the server's closing record, then the Flower run (``party``) ends."""
    deadline = time.monotonic() + measure.timeout_s
    closed = False
    while not closed and time.monotonic() < deadline:
        try:
            rec = records.get(timeout=0.5)
        except queue.Empty:
            if not party.is_alive():
                break
            continue
        if not isinstance(rec, Record):
            if rec.get("kind") == "party_error":
                raise PartyError(f"{rec['role']} failed: {rec['problem']}", rec.get("fix") or "see the Flower logs")
            continue  # an oracle copy after the last round
        closed = isinstance(rec, FlowerRunRecord)
        write(rec)
    if not closed:
        raise PartyError(f"the Flower run of '{label}' did not close cleanly: {tail(log)}", f"see {log}")
    party.join(timeout=60)


def _read_key(path: Path) -> bytes:
    try:
        return bytes.fromhex(path.read_text().strip())
    except (OSError, ValueError) as err:
        raise PartyError(
            f"cannot read the federation's client key {path}: {err}", "recreate it with `hebench flower up`"
        ) from None
