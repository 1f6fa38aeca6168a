"""The Flower ServerApp: HE FedAvg over the run's suite configuration.

Component path for a Flower App: ``hebench.runtime.flower.server_app:app``. It reads
the hebench plan from the run config, takes public keys from the hub with the
server's own credential, and reports its records there; failures are reported
too, so the driver can name them.
"""

from __future__ import annotations

import traceback

from flwr.app import Context
from flwr.serverapp import Grid, ServerApp

from hebench.errors import HebenchError
from hebench.runtime.flower.hub_link import HubLink
from hebench.runtime.flower.plan import SERVER_KEY, FlowerPlan
from hebench.runtime.flower.strategy import HEFedAvg

app = ServerApp()


@app.main()
def main(grid: Grid, context: Context) -> None:
    plan = FlowerPlan.from_run_config(dict(context.run_config))
    serve(grid, plan, bytes.fromhex(str(context.run_config[SERVER_KEY])))


def serve(grid: Grid, plan: FlowerPlan, credential: bytes, worker: str | None = None) -> None:
    """The whole run on ``grid``: mask agreement (selective), then every round; records and failures to the hub.

    ``worker``: the process the ServerApp shares with the simulation engine (thread CPU accounting).
    """
    hub = HubLink.open(plan.hub_public, plan.hub_ca, credential, {"role": "server"}, plan.suite.measure.timeout_s)
    hub.channel.record_to(plan.transcript("aggregator-keys"))
    try:
        strategy = HEFedAvg(plan, hub, plan.transcript("aggregator-from-flower"), worker)
        timeout = plan.suite.measure.timeout_s
        strategy.agree_mask(grid, timeout)
        strategy.run(grid, timeout)
        hub.record({"kind": "flower_run", "holds_secret_key": strategy.holds_secret_key})
    except HebenchError as err:
        hub.record({"kind": "party_error", "role": "aggregator", "problem": err.problem, "fix": err.fix})
        raise
    except Exception as err:
        problem = f"{type(err).__name__}: {err}"
        hub.record(
            {
                "kind": "party_error",
                "role": "aggregator",
                "problem": problem,
                "fix": "",
                "trace": traceback.format_exc(),
            }
        )
        raise
    finally:
        hub.close()
