"""``hebench run SUITE --engine flower``: the Flower runtime, each configuration a run on a federation.

The runtime starts the run's hub (key authority and record sink) as a local
process, submits hebench's Flower App with ``flwr run``, and writes what the
ServerApp and the nodes' mods report as the same JSON-lines records as local
runs, marked ``runtime: flower``. Without a federation folder it starts a
loopback one (TLS on) for the duration of the run.
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

from hebench.errors import PartyError, SuiteError
from hebench.fl.party import Credentials, PartyContext, party_main
from hebench.flower.app_files import write_app, write_run_config
from hebench.flower.federation import CONNECTION, Federation, console_script, start_local_federation, tail
from hebench.flower.hub import HubSettings, run_hub
from hebench.flower.plan import FlowerPlan
from hebench.net.address import parse_address
from hebench.results.records import FlowerRunRecord, Record
from hebench.results.run_folder import RunFolder
from hebench.runtime.base import ConfigurationRun, Started, Supervised
from hebench.suite import MeasureSpec, Suite


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

    @contextlib.contextmanager
    def session(self, suite: Suite, run_dir: Path, note: Callable[[str], None]) -> Iterator[None]:
        """Use the given federation, or start a loopback one (TLS on) for the whole suite."""
        refuse_faults(suite)
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
        assert self.federation is not None
        return {"runtime": "flower", "superlink": self.federation.superlink}

    def start(self, run: ConfigurationRun, control_recv: Callable[[Any, str, Started], Any]) -> Started:
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
        started, parent, ctx = start_hub(run, _describe_exit)
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
            assert ctx.credentials.public is not None
            overrides = write_run_config(folder.flower_run_config(config.label), plan, ctx.credentials.public)
            log = folder.ensure(folder.flower_log(config.label))
            with log.open("ab") as out:
                argv = [console_script("flwr"), "run", str(app), CONNECTION, "--run-config", str(overrides), "--stream"]
                popen = subprocess.Popen(
                    argv, stdout=out, stderr=subprocess.STDOUT, env=fed.env(), start_new_session=True
                )
            flwr = FlowerProcess(popen, log)
            started.parties["flwr run"] = flwr
            started.finish = lambda write: finish(flwr, flwr.log, started.records, write, config.label, suite.measure)
        except BaseException:
            started.stop()
            raise
        return started


def refuse_faults(suite: Suite) -> None:
    """Flower's runtime does not apply ``faults:`` yet: a suite with faults fails before anything starts."""
    faulty = [c.label for c in suite.configurations if suite.faults_for(c) is not None]
    if faulty:
        raise SuiteError(
            f"faults: (dropouts, stragglers) are not applied on Flower's runtime yet ({', '.join(faulty[:3])})",
            "run the suite on the local runtime (without --engine flower), or --set faults.dropout=0",
        )


def start_hub(
    run: ConfigurationRun, describe_exit: Callable[[str, int], tuple[str, str]]
) -> tuple[Started, Connection, PartyContext]:
    """The run's hub process (key authority and record sink), waiting for its :class:`HubSettings` on the pipe.

    ``ctx.credentials.public`` is the server door's credential. The returned ``stop`` ends every other
    party the caller adds to ``started.parties`` (``flwr run``, the simulation), then the hub.
    """
    creds = Credentials(public=secrets.token_bytes(32))  # the hub's server door
    ctx = PartyContext(
        suite=run.suite,
        config=run.config,
        run_dir=run.run_dir,
        credentials=creds,
        run_id=secrets.token_hex(8),
        start_round=0,
        input_shape=run.data.input_shape,
        num_classes=run.data.num_classes,
    )
    spawn = mp.get_context("spawn")
    started = Started(records=spawn.Queue(), describe_exit=describe_exit)
    parent, child = spawn.Pipe()
    hub = spawn.Process(target=party_main, args=("hub", run_hub, ctx, child, started.records), name="hub", daemon=True)
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
