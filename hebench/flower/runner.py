"""``hebench run SUITE --engine flower``: each configuration as a run on a Flower federation.

The driver starts the run's hub (key authority and record sink) as a local
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
from pathlib import Path
from typing import Any

from hebench.data.federated import FederatedData
from hebench.errors import PartyError
from hebench.fl.party import PartyContext, party_main, safe_label
from hebench.flower.app_files import write_app, write_run_config
from hebench.flower.federation import CONNECTION, Federation, console_script, start_local_federation, tail
from hebench.flower.hub import HubSettings, run_hub
from hebench.flower.plan import FlowerPlan
from hebench.results import ResultWriter
from hebench.runtime.runner import RunEvent, Runner
from hebench.suite import Configuration, Suite


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


class FlowerRunner(Runner):
    def __init__(
        self,
        suite: Suite,
        run_dir: Path,
        federation: Federation | None = None,
        on_event: Callable[[RunEvent], None] | None = None,
    ) -> None:
        super().__init__(suite, run_dir, on_event)
        self.federation = federation

    def run(self, resume: bool = False) -> Path:
        if resume:
            raise PartyError(
                "--resume is not supported with --engine flower", "rerun the suite into a new --out folder"
            )
        with self._federation() as fed:
            self.federation = fed
            return super().run(resume=False)

    @contextlib.contextmanager
    def _federation(self) -> Iterator[Federation]:
        if self.federation is not None:
            yield self.federation
            return
        offload = any(c.mode == "offload" for c in self.suite.configurations)
        self.on_event(RunEvent("flower: starting a loopback federation", None))
        local = start_local_federation(
            self.run_dir.resolve() / "flower-federation", self.suite.data.clients, tls=True, engines=offload
        )
        try:
            yield local.federation
        finally:
            local.stop()

    def _run_config(self, config: Configuration, data: FederatedData, start: int, writer: ResultWriter) -> None:
        suite, fed = self.suite, self.federation
        assert fed is not None
        if fed.nodes != suite.data.clients:
            raise PartyError(
                f"the federation has {fed.nodes} SuperNodes, the suite {suite.data.clients} clients",
                f"set --set data.clients={fed.nodes}, or start a federation with --nodes {suite.data.clients}",
            )
        if config.mode == "offload" and len(fed.engines) != fed.nodes:
            raise PartyError(
                f"'{config.label}' is offload, but the federation has no engine per SuperNode",
                "start the federation with `hebench flower up --engines`",
            )
        record = self._configuration_record(config, data, 0)
        writer.write("configuration", {**record, "runtime": "flower", "superlink": fed.superlink})
        self.on_event(RunEvent(config.label, None))
        server_key = secrets.token_bytes(32)
        ctx = PartyContext(
            suite=suite,
            config=config,
            run_dir=self.run_dir,
            authkey=server_key,
            start_round=0,
            input_shape=data.input_shape,
            num_classes=data.num_classes,
        )
        spawn = mp.get_context("spawn")
        records: Any = spawn.Queue()
        parent, child = spawn.Pipe()
        hub = spawn.Process(target=party_main, args=("hub", run_hub, ctx, child, records), name="hub", daemon=True)
        hub.start()
        procs: dict[str, Any] = {"hub": hub}
        flwr: FlowerProcess | None = None
        try:
            settings = HubSettings(
                client_key=_read_key(Path(fed.client_key)),
                host=fed.hub_host,
                ports=fed.hub_ports,
                tls_dir=fed.hub_tls_dir,
                engines=tuple(_address(e) for e in fed.engines) if config.mode == "offload" else (),
                engine_tls_dir=fed.engine_tls_dir,
            )
            parent.send(settings)
            doors = self._control_recv(parent, procs, records, "hub")
            hub_ca = Path(fed.hub_ca).read_text() if fed.hub_ca else None
            plan = FlowerPlan(
                suite,
                suite.configurations.index(config),
                ctx.run_id,
                doors["server"],
                doors["client"],
                str(self.run_dir.resolve()),
                hub_ca,
            )
            app = write_app(self.run_dir / "flower-app")
            overrides = write_run_config(app / f"run-config-{safe_label(config.label)}.toml", plan, server_key)
            log = self.run_dir / "flower-logs" / f"{safe_label(config.label)}.log"
            log.parent.mkdir(parents=True, exist_ok=True)
            with log.open("ab") as out:
                argv = [console_script("flwr"), "run", str(app), CONNECTION, "--run-config", str(overrides), "--stream"]
                popen = subprocess.Popen(
                    argv, stdout=out, stderr=subprocess.STDOUT, env=fed.env(), start_new_session=True
                )
            flwr = FlowerProcess(popen, log)
            procs["flwr run"] = flwr
            self._collect(config, 0, records, procs, writer)
            self._finish(flwr, records, writer, config.label)
        finally:
            if flwr is not None and flwr.is_alive():
                flwr.terminate()
            with contextlib.suppress(OSError, BrokenPipeError):
                parent.send("stop")
            hub.join(timeout=10)
            if hub.is_alive():
                hub.terminate()
            records.close()

    def _finish(self, flwr: FlowerProcess, records: Any, writer: ResultWriter, label: str) -> None:
        """After the last round: the server's closing record, then ``flwr run`` ends."""
        deadline = time.monotonic() + self.suite.measure.timeout_s
        closed = False
        while not closed and time.monotonic() < deadline:
            try:
                rec = records.get(timeout=0.5)
            except queue.Empty:
                if flwr.popen.poll() is not None:
                    break
                continue
            kind = rec.pop("kind")
            if kind == "party_error":
                raise PartyError(f"{rec['role']} failed: {rec['problem']}", rec.get("fix") or "see the Flower logs")
            writer.write(kind, {"config": label, **rec})
            closed = kind == "flower_run"
        if not closed:
            raise PartyError(f"the Flower run of '{label}' did not close cleanly: {tail(flwr.log)}", f"see {flwr.log}")
        flwr.join(timeout=60)

    def _check_alive(self, procs: dict[str, Any], records: Any) -> None:
        flwr = procs.get("flwr run")
        others = {k: v for k, v in procs.items() if k != "flwr run"}
        super()._check_alive(others, records)
        if flwr is not None and flwr.exitcode is not None:
            try:
                while True:
                    rec = records.get(timeout=1.0)
                    if rec.get("kind") == "party_error":
                        raise PartyError(f"{rec['role']} failed: {rec['problem']}", rec.get("fix") or "see the logs")
            except queue.Empty:
                pass
            raise PartyError(
                f"the Flower run ended before its last round: {tail(flwr.log)}",
                f"see {flwr.log} and the federation's logs",
            )


def _read_key(path: Path) -> bytes:
    try:
        return bytes.fromhex(path.read_text().strip())
    except (OSError, ValueError) as err:
        raise PartyError(
            f"cannot read the federation's client key {path}: {err}", "recreate it with `hebench flower up`"
        ) from None


def _address(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    return host, int(port)
