"""``hebench run SUITE --engine flower-sim``: each configuration on Flower's Simulation Engine (Ray).

The same ClientApp, encrypting mod and ciphertext-summing strategy as
``--engine flower``, with ``data.clients`` virtual nodes hosted by a few Ray
actor processes instead of a SuperNode each. Keys and records go through the
run's hub, as on a federation: the ServerApp holds the server's credential
(public key sets only), the virtual nodes the clients' one, kept in a private
file for the configuration's run. Each virtual node is charged its own
thread's CPU; Ray's and Flower's output goes to the run folder's flower-logs.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import secrets
import shutil
import signal
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hebench.config import Suite
from hebench.errors import ParameterError
from hebench.results.run_folder import RunFolder
from hebench.runtime.base import ConfigurationRun, Started, nothing_to_hold
from hebench.runtime.flower.hub import HubSettings
from hebench.runtime.flower.runner import finish, plan_for, start_hub
from hebench.runtime.flower.sim_apps import simulate

NAME = "flower-sim"
LOOPBACK = "127.0.0.1"


class SimulationProcess:
    """The simulation's process seen as a party; stopping it stops its process group (Ray's processes)."""

    def __init__(self, process: Any) -> None:
        self.process = process

    @property
    def exitcode(self) -> int | None:
        return self.process.exitcode

    def is_alive(self) -> bool:
        return self.process.is_alive()

    def join(self, timeout: float | None = None) -> None:
        self.process.join(timeout)

    def terminate(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGTERM)
        self.process.terminate()


class FlowerSimRuntime:
    """Each configuration as a Flower simulation: the run's hub, then ``run_simulation`` in its own process."""

    name = NAME
    supports_resume = False  # a simulation cannot restart mid-way from hebench's checkpoints

    def session(self, suite: Suite, run_dir: Path, note: Callable[[str], None]) -> contextlib.AbstractContextManager:
        refused = [c.label for c in suite.configurations if c.spec.needs_engines]
        if refused:
            raise ParameterError(
                f"{', '.join(refused)} need an offload engine beside each client; Flower's simulation hosts "
                "virtual clients in shared Ray workers and has no per-node engine",
                "run offload with --engine flower (`hebench flower up --engines`) or the local runtime, "
                "or run a copy of the suite without those configurations",
            )
        return nothing_to_hold()

    def configuration_fields(self) -> dict[str, Any]:
        return {"runtime": NAME}

    def start(self, run: ConfigurationRun, control_recv: Callable[[Any, str, Started], Any]) -> Started:
        suite, config = run.suite, run.config
        started, parent, ctx = start_hub(run, _describe_exit)
        keys = Path(tempfile.mkdtemp(prefix="hebench-sim-"))  # private (0700): the clients' hub credential
        stop_hub = started.stop

        def stop() -> None:
            stop_hub()
            shutil.rmtree(keys, ignore_errors=True)

        started.stop = stop
        try:
            client_key = secrets.token_bytes(32)
            credential = keys / "client.key"
            credential.write_text(client_key.hex())
            credential.chmod(0o600)
            parent.send(HubSettings(client_key, LOOPBACK, (0, 0), None, (), None, runtime=NAME))
            doors = control_recv(parent, "hub", started)
            plan = plan_for(run, ctx, doors)
            folder = RunFolder(run.run_dir)
            log = folder.ensure(folder.flower_log(config.label))
            # Ray actors, one CPU each: runtime.workers, else one per usable core (as the local pool)
            workers = min(suite.runtime.workers or len(os.sched_getaffinity(0)), suite.data.clients)
            assert ctx.credentials.hub is not None
            spawn = mp.get_context("spawn")
            process = spawn.Process(
                target=simulate,
                args=(plan.to_json(), ctx.credentials.hub, str(credential), workers, str(log)),
                name=NAME,
            )
            process.start()
            sim = SimulationProcess(process)
            started.parties[NAME] = sim
            started.finish = lambda write: finish(sim, log, started.records, write, config.label, suite.measure)
        except BaseException:
            stop()
            raise
        return started


def _describe_exit(name: str, code: int) -> tuple[str, str]:
    if name != NAME:
        return f"{name} exited with code {code}", "see the message above"
    return "the Flower simulation ended before its last round", "see the run folder's flower-logs"
