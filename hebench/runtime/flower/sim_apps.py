"""hebench's Flower App for the Simulation Engine: the same ClientApp, mod and strategy, virtual nodes.

Simulation gives each virtual node only ``partition-id`` and ``num-partitions``
and the apps no run config, so one more mod (outermost) hands each node the
run's plan, the clients' hub credential file and the name of the worker
process hosting it (its CPU is then charged as thread time, as in the local
pool). The ServerApp is hebench's own ``serve`` with the server's credential.
``simulate`` is the process entry: Ray and Flower write to the run's log only.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from flwr.app import Context, Message
from flwr.clientapp import ClientApp
from flwr.clientapp.typing import ClientAppCallable
from flwr.serverapp import Grid, ServerApp

from hebench.runtime.flower.client_app import with_functions
from hebench.runtime.flower.client_mod import hebench_mod
from hebench.runtime.flower.plan import PLAN_KEY, FlowerPlan
from hebench.runtime.flower.server_app import serve


@dataclass(frozen=True)
class VirtualNode:
    """Flower client mod: gives a simulated node what a SuperNode's run and node config would."""

    plan_json: str
    credential_file: str

    def __call__(self, msg: Message, context: Context, call_next: ClientAppCallable) -> Message:
        context.node_config["hebench-credential"] = self.credential_file
        context.node_config["hebench-worker"] = f"flower-sim-{os.getpid()}"
        context.run_config[PLAN_KEY] = self.plan_json  # for this message only: Flower refuses a changed run config
        try:
            return call_next(msg, context)
        finally:
            del context.run_config[PLAN_KEY]


def client_app(plan_json: str, credential_file: str) -> ClientApp:
    return with_functions(ClientApp(mods=[VirtualNode(plan_json, credential_file), hebench_mod]))


def server_app(plan: FlowerPlan, server_key: bytes) -> ServerApp:
    app = ServerApp()

    @app.main()
    def main(grid: Grid, context: Context) -> None:
        serve(grid, plan, server_key, worker=f"flower-sim-server-{os.getpid()}")

    return app


def backend_config(workers: int) -> dict[str, Any]:
    """Ray sized for a small machine: ``workers`` single-CPU actors, no GPU, no dashboard, a small object store."""
    return {
        "client_resources": {"num_cpus": 1, "num_gpus": 0.0},
        "init_args": {
            "address": "local",  # a private Ray instance, never another session's
            "num_cpus": workers,
            "num_gpus": 0,
            "object_store_memory": 256 * 2**20,
            "include_dashboard": False,
            "log_to_driver": True,  # actors' output goes to this process's (redirected) stderr
            "logging_level": "WARNING",
        },
    }


def simulate(plan_json: str, server_key: bytes, credential_file: str, workers: int, log: str) -> None:
    """Process entry: the whole Flower simulation of one configuration, its output appended to ``log``."""
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.setpgrp()  # Ray's processes go with this one when the runner stops it
    from flwr.simulation import run_simulation

    plan = FlowerPlan.from_run_config({PLAN_KEY: plan_json})
    run_simulation(
        server_app=server_app(plan, server_key),
        client_app=client_app(plan_json, credential_file),
        num_supernodes=plan.suite.data.clients,
        backend_config=backend_config(workers),
    )
