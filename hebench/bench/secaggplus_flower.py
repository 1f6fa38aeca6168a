"""hebench's ``secagg`` beside Flower's own SecAgg+ (``SecAggPlusWorkflow`` + ``secaggplus_mod``, flwr 1.41), on the
same parameters, with the same clients dropping at the masked-upload stage. hebench runs its honest-but-curious
variant (``params.model``), the protocol Flower's workflow runs; ``secagg_active`` measures the active model's cost.

Flower's side runs Flower's code unchanged: the legacy ``DefaultWorkflow`` with ``SecAggPlusWorkflow`` as its fit
workflow and a FedAvg strategy on the server, and a ``ClientApp`` with ``secaggplus_mod`` on every node. Only the
transport is replaced: ``flower_grid.InProcessGrid`` is a ``Grid`` that serialises each message to Flower's
protobuf (``message_to_proto``, its bytes counted), hands it to the destination node's ``ClientApp`` in a thread of
its own (so the server thread's CPU is the server's alone), and reads the reply back the same way. Flower's
simulation (``run_simulation``) is not used for the figures: it starts Ray with one actor per CPU and runs the
ServerApp beside the SuperLink's state in one process, so neither the server's own CPU nor the bytes could be
isolated; the harness's dropout is checked against it once (:func:`flower_simulation_check`).

A dropped node is one that stops replying at the masked-upload stage (``flower_grid.stop_at_masked_upload``, the
costly case: its pairwise masks are in its neighbours' uploads and must be rebuilt from its key's shares). The grid
answers for it as the SuperLink does for a node that stopped reporting: an error reply with ``NODE_UNAVAILABLE``
(``create_message_error_unavailable_res_message``), which the workflow counts as a dropout.

Same parameters: number of clients, values per update, num_shares (7: six neighbours on a ring, as hebench's),
reconstruction_threshold (4), clipping range 8, quantisation range 2^22, modulus 2^32, and the same dropped clients
(``hebench.bench.dropouts.dropped_clients``, the fault seed's draw). Flower shuffles its ring with Python's
``random``; here its shuffle is made to sort the node ids (:data:`SAME_RING`), so each client has the same
neighbours as in hebench's ring and the same dropouts break or spare the same rounds. hebench's side is
``hebench.bench.dropouts.secagg_row`` with Flower's mask generator (``prg: flwr-32bit``) and with its default
(``full-key``). Differences that remain, by design of each: Flower quantises the update at full scale and uploads
its weight beside it (``max_weight`` is set to the samples, so each client's factor is 2^22), then divides by the
factors' sum; hebench quantises ``weight * update`` with FedAvg's weight; Flower uploads int64 arrays (np.save),
hebench uint32.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from hebench.bench.dropouts import SECAGG_SHARES as NUM_SHARES  # six neighbours on a ring
from hebench.bench.dropouts import SECAGG_THRESHOLD as THRESHOLD  # any four of seven shares rebuild
from hebench.bench.registry import study
from hebench.bench.support.flower_grid import as_server_app, in_process_grid, stop_at_masked_upload
from hebench.bench.support.secaggplus_bell import BELL_2020, neighbours_at_scale

CLIENTS = (8, 32, 100)
RATES = (0.0, 0.1, 0.2, 0.3)
REPEATS = 3  # each point's rounds, interleaved; the rows carry the median of every figure
VALUES = 100_000
SAMPLES = 10  # every client's num_examples (equal weights: the FedAvg of the survivors is their mean)
CLIPPING_RANGE, QUANTIZATION_RANGE, MODULUS = 8.0, 2**22, 2**32
SAME_RING = True  # Flower's ring ordered as hebench's (sorted node ids) instead of shuffled
RING_SEED = 7


def client_vectors(clients: int, values: int, seed: int = 7) -> dict[int, np.ndarray]:
    """Each client's update, drawn as ``hebench.bench.dropouts.secagg_row`` draws them."""
    rng = np.random.default_rng(seed)
    return {i: rng.normal(0, 0.1, values).astype(np.float32) for i in range(clients)}


class _SortedRing:
    """Stands in for the ``random`` module inside Flower's workflow: its shuffle sorts (hebench's ring order)."""

    @staticmethod
    def shuffle(items: list[int]) -> None:
        items.sort()


def flower_secaggplus_round(
    clients: int,
    dropped: set[int],
    values: int = VALUES,
    num_shares: int = NUM_SHARES,
    threshold: int = THRESHOLD,
    same_ring: bool = SAME_RING,
    keep_aggregate: bool = False,
) -> dict[str, Any]:
    """One round of Flower's SecAgg+ with the clients in ``dropped`` (indices 0..clients-1) stopping at the masked
    upload: the server's CPU and wall per stage, its bytes, and the aggregate beside the survivors' plaintext sum
    (the aggregate itself too, as ``aggregate``, with ``keep_aggregate``)."""
    from unittest import mock

    from flwr.app import Context, RecordDict
    from flwr.client import ClientApp, NumPyClient
    from flwr.client.mod import secaggplus_mod
    from flwr.common import ndarrays_to_parameters, parameters_to_ndarrays
    from flwr.server import ServerConfig
    from flwr.server.compat.legacy_context import LegacyContext
    from flwr.server.strategy import FedAvg
    from flwr.server.workflow import DefaultWorkflow, SecAggPlusWorkflow
    from flwr.server.workflow.secure_aggregation import secaggplus_workflow

    vectors = client_vectors(clients, values)
    node_of = {i: i + 1 for i in range(clients)}  # Flower node ids (0 is the SuperLink's)
    index_of = {nid: i for i, nid in node_of.items()}

    class Update(NumPyClient):
        def __init__(self, index: int) -> None:
            self.index = index

        def fit(self, parameters: Any, config: Any) -> tuple[list[np.ndarray], int, dict]:
            return [vectors[self.index]], SAMPLES, {}

    client_app = ClientApp(
        client_fn=lambda context: Update(index_of[context.node_id]).to_client(),
        mods=[stop_at_masked_upload({node_of[i] for i in dropped}), secaggplus_mod],
    )
    stages: dict[str, dict[str, float]] = {}
    outcome: dict[str, Any] = {}

    class TimedSecAggPlus(SecAggPlusWorkflow):
        """Flower's workflow, each stage timed on the server thread (its logic untouched)."""

        def _timed(self, name: str, step: Callable[..., bool], grid: Any, context: Any, state: Any) -> bool:
            b0 = grid.bytes_sent + grid.bytes_received
            t0, w0 = time.thread_time(), time.perf_counter()
            ok = step(grid, context, state)
            if name == "collect_masked_vectors":  # the nodes whose masked upload did not come
                outcome["dropped_nodes"] = sorted(state.sampled_node_ids - state.active_node_ids)
            stages[name] = {
                "cpu_s": time.thread_time() - t0,
                "wall_s": time.perf_counter() - w0,
                "bytes": grid.bytes_sent + grid.bytes_received - b0,
            }
            if not ok:
                outcome["failed"] = f"SecAgg+ halted at its {name} stage (Flower: insufficient shares or nodes)"
            elif name == "unmask":
                outcome["aggregate"] = parameters_to_ndarrays(state.legacy_results[0][1].parameters)
            return ok

        def setup_stage(self, grid: Any, context: Any, state: Any) -> bool:
            return self._timed("setup", super().setup_stage, grid, context, state)

        def share_keys_stage(self, grid: Any, context: Any, state: Any) -> bool:
            return self._timed("share_keys", super().share_keys_stage, grid, context, state)

        def collect_masked_vectors_stage(self, grid: Any, context: Any, state: Any) -> bool:
            return self._timed("collect_masked_vectors", super().collect_masked_vectors_stage, grid, context, state)

        def unmask_stage(self, grid: Any, context: Any, state: Any) -> bool:
            return self._timed("unmask", super().unmask_stage, grid, context, state)

    workflow = TimedSecAggPlus(
        num_shares=num_shares,
        reconstruction_threshold=threshold,
        max_weight=float(SAMPLES),  # each client's weight factor is the whole quantisation range
        clipping_range=CLIPPING_RANGE,
        quantization_range=QUANTIZATION_RANGE,
        modulus_range=MODULUS,
    )
    strategy = FedAvg(
        fraction_fit=1.0,
        fraction_evaluate=0.0,
        min_fit_clients=clients,
        min_evaluate_clients=0,
        min_available_clients=clients,
        initial_parameters=ndarrays_to_parameters([]),  # the clients ignore the model: no broadcast to count
    )
    grid = in_process_grid(client_app, list(node_of.values()))
    context = LegacyContext(
        Context(run_id=1, node_id=0, node_config={}, state=RecordDict(), run_config={}),
        config=ServerConfig(num_rounds=1),
        strategy=strategy,
    )
    ring = mock.patch.object(secaggplus_workflow, "random", _SortedRing() if same_ring else random.Random(RING_SEED))
    started = time.perf_counter()
    with as_server_app(grid.run.run_id), ring:
        DefaultWorkflow(fit_workflow=workflow)(grid, context)
    survivors = [i for i in range(clients) if i not in dropped]
    row: dict[str, Any] = {
        "implementation": "flower",
        "clients": clients,
        "dropped": len(dropped),
        "dropped_clients": sorted(dropped),
        "flower_dropped_clients": [index_of[n] for n in outcome.get("dropped_nodes", [])],
        "workflow_wall_s": time.perf_counter() - started,
        "stages": stages,
    }
    if "failed" in outcome:
        return {**row, "failed": outcome["failed"]}
    total_cpu = sum(s["cpu_s"] for s in stages.values())
    aggregate = np.asarray(outcome["aggregate"][0], dtype=np.float64)  # Flower's FedAvg of the survivors
    plain_sum = np.sum([vectors[i].astype(np.float64) for i in survivors], axis=0)
    step = 2 * CLIPPING_RANGE / QUANTIZATION_RANGE  # one quantisation step per summand
    if keep_aggregate:
        row["aggregate"] = aggregate
    return {
        **row,
        "round_cpu_s": total_cpu,
        "round_wall_s": sum(s["wall_s"] for s in stages.values()),
        "recovery_cpu_s": stages["unmask"]["cpu_s"],
        "recovery_wall_s": stages["unmask"]["wall_s"],
        "server_bytes": sum(s["bytes"] for s in stages.values()),
        "recovery_bytes": stages["unmask"]["bytes"],
        "client_cpu_s": grid.client_cpu_s / clients,
        "sum_max_error": float(np.max(np.abs(aggregate * len(survivors) - plain_sum))),
        "sum_error_bound": step * len(survivors),  # stochastic rounding: under one step per summand
    }


def flower_simulation_check(clients: int = 4, dropped: int = 1, values: int = 100) -> dict[str, Any]:
    """The harness's dropout checked against Flower's own simulation engine: the same workflow, mods and vectors
    under ``flwr.simulation.run_simulation`` (Ray, 2 CPUs), where the stopped node's ClientApp raises and the
    simulation replies with an error; the aggregate beside the in-process Grid's and the survivors' sum."""
    from flwr.client import ClientApp, NumPyClient
    from flwr.client.mod import secaggplus_mod
    from flwr.common import ndarrays_to_parameters, parameters_to_ndarrays
    from flwr.server import ServerApp, ServerConfig
    from flwr.server.compat.legacy_context import LegacyContext
    from flwr.server.strategy import FedAvg
    from flwr.server.workflow import DefaultWorkflow, SecAggPlusWorkflow
    from flwr.simulation import run_simulation

    vectors = client_vectors(clients, values)
    got: dict[str, Any] = {}
    stop = stop_at_masked_upload(set())

    def stop_by_partition(msg: Any, ctxt: Any, call_next: Callable[..., Any]) -> Any:
        if int(ctxt.node_config["partition-id"]) == dropped:  # node ids are the simulation's: stop by partition
            return stop_at_masked_upload({msg.metadata.dst_node_id})(msg, ctxt, call_next)
        return stop(msg, ctxt, call_next)

    class Update(NumPyClient):
        def __init__(self, index: int) -> None:
            self.index = index

        def fit(self, parameters: Any, config: Any) -> tuple[list[np.ndarray], int, dict]:
            return [vectors[self.index]], SAMPLES, {}

    class Captured(SecAggPlusWorkflow):
        def unmask_stage(self, grid: Any, context: Any, state: Any) -> bool:
            ok = super().unmask_stage(grid, context, state)
            if ok:
                got["aggregate"] = parameters_to_ndarrays(state.legacy_results[0][1].parameters)[0]
            return ok

    server_app = ServerApp()

    @server_app.main()
    def main(grid: Any, context: Any) -> None:
        strategy = FedAvg(
            fraction_fit=1.0,
            fraction_evaluate=0.0,
            min_fit_clients=clients,
            min_available_clients=clients,
            initial_parameters=ndarrays_to_parameters([]),
        )
        legacy = LegacyContext(context=context, config=ServerConfig(num_rounds=1), strategy=strategy)
        workflow = Captured(num_shares=3, reconstruction_threshold=2, max_weight=float(SAMPLES))
        DefaultWorkflow(fit_workflow=workflow)(grid, legacy)

    client_app = ClientApp(
        client_fn=lambda context: Update(int(context.node_config["partition-id"])).to_client(),
        mods=[stop_by_partition, secaggplus_mod],
    )
    backend = {
        "client_resources": {"num_cpus": 1, "num_gpus": 0.0},
        "init_args": {
            "address": "local",
            "num_cpus": 2,
            "num_gpus": 0,
            "object_store_memory": 256 * 2**20,
            "include_dashboard": False,
            "logging_level": "WARNING",
        },
    }
    started = time.perf_counter()
    run_simulation(server_app=server_app, client_app=client_app, num_supernodes=clients, backend_config=backend)
    wall = time.perf_counter() - started
    survivors = [i for i in range(clients) if i != dropped]
    plain_sum = np.sum([vectors[i].astype(np.float64) for i in survivors], axis=0)
    grid_row = flower_secaggplus_round(clients, {dropped}, values, num_shares=3, threshold=2, keep_aggregate=True)
    result: dict[str, Any] = {
        "clients": clients,
        "dropped_client": dropped,
        "values": values,
        "simulation_wall_s": wall,
        "sum_error_bound": 2 * CLIPPING_RANGE / QUANTIZATION_RANGE * len(survivors),
        "in_process_sum_max_error": grid_row.get("sum_max_error"),
    }
    if "aggregate" not in got:
        return {**result, "failed": "Flower's simulation halted the round"}
    aggregate = np.asarray(got["aggregate"], dtype=np.float64)
    return {
        **result,
        "simulation_sum_max_error": float(np.max(np.abs(aggregate * len(survivors) - plain_sum))),
        "simulation_vs_in_process_max_diff": float(np.max(np.abs(aggregate - grid_row["aggregate"]))),
    }


def hebench_secagg_round(clients: int, rate: float, values: int, prg: str) -> dict[str, Any]:
    """hebench's secagg at the same point (``hebench.bench.dropouts.secagg_row``: same vectors and dropped clients), in
    its honest-but-curious variant: the protocol Flower's workflow runs (the active model's extra cost:
    ``hebench.bench.secagg_active``)."""
    from hebench.bench.dropouts import secagg_row
    from hebench.protections.secagg.params import SecAggParams

    params = SecAggParams(
        num_shares=NUM_SHARES,
        reconstruction_threshold=THRESHOLD,
        clipping_range=CLIPPING_RANGE,
        quantization_range=QUANTIZATION_RANGE,
        modulus=MODULUS,
        prg=prg,
        model="honest-but-curious",
    )
    row = secagg_row(clients, rate, values, params)
    return {"implementation": f"hebench ({prg})", "prg": prg, **row}


def _ratios(ours: dict[str, Any], flower: dict[str, Any]) -> dict[str, float | None]:
    def ratio(a: float, b: float) -> float | None:
        return a / b if b > 0 else None

    return {
        "round_cpu": ratio(ours["round_cpu_s"], flower["round_cpu_s"]),
        "round_wall": ratio(ours["round_wall_s"], flower["round_wall_s"]),
        "recovery_cpu": ratio(ours["recovery_cpu_s"], flower["recovery_cpu_s"]),
        "recovery_wall": ratio(ours["recovery_wall_s"], flower["recovery_wall_s"]),
        "server_bytes": ratio(ours["aggregator_bytes"], flower["server_bytes"]),
        "client_cpu": ratio(ours["client_cpu_s"], flower["client_cpu_s"]),
    }


def median_row(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """One row from repeated rounds: every number the median of its repeats (nested dicts alike), the rest as the
    first row has it; a point where any repeat failed keeps that failure."""
    failed = [r for r in rows if "failed" in r]
    if failed:
        return {**failed[0], "repeats": len(rows)}

    def merge(values: list[Any]) -> Any:
        first = values[0]
        if isinstance(first, dict):
            return {k: merge([v[k] for v in values]) for k in first if all(k in v for v in values)}
        if isinstance(first, float) and all(isinstance(v, float) for v in values):
            return float(np.median(values))
        return first

    return {**merge(rows), "repeats": len(rows)}


@study("secaggplus_flower")
def secaggplus_flower(
    clients: tuple[int, ...] = CLIENTS,
    rates: tuple[float, ...] = RATES,
    values: int = VALUES,
    prgs: tuple[str, ...] = ("flwr-32bit", "full-key"),
    repeats: int = REPEATS,
    simulation_check: bool = True,
) -> dict[str, Any]:
    """hebench's secagg beside Flower's own SecAgg+ on the same parameters and dropped clients, hebench / Flower
    per point.

    Flower's SecAgg+ and hebench's secagg at every (clients, dropout rate), measured in the same run (each point
    ``repeats`` times, interleaved, medians reported); with ``simulation_check``, the harness's dropout checked
    once against ``run_simulation`` (:func:`flower_simulation_check`, Ray: about 20 s)."""
    from hebench.bench.dropouts import dropped_clients

    flower_secaggplus_round(4, set(), 64, num_shares=3, threshold=2)  # warm-up: imports and first-call caches
    for prg in prgs:
        hebench_secagg_round(4, 0.0, 64, prg)
    points = []
    for n in clients:
        for rate in rates:
            drop = dropped_clients(n, rate)
            runs: dict[str, list[dict[str, Any]]] = {"flower": [], **{prg: [] for prg in prgs}}
            for _ in range(repeats):
                runs["flower"].append(flower_secaggplus_round(n, drop, values))
                for prg in prgs:
                    runs[prg].append(hebench_secagg_round(n, rate, values, prg))
            flower = median_row(runs["flower"])
            ours = [median_row(runs[prg]) for prg in prgs]
            point: dict[str, Any] = {"clients": n, "dropout": rate, "dropped": len(drop), "flower": flower}
            point["hebench"] = ours
            if "failed" not in flower:
                point["hebench_over_flower"] = {row["prg"]: _ratios(row, flower) for row in ours if "failed" not in row}
            points.append(point)
    return {
        "benchmark": "secaggplus_flower",
        "parameters": {
            "values_per_update": values,
            "num_shares": NUM_SHARES,
            "neighbours": NUM_SHARES - 1,
            "reconstruction_threshold": THRESHOLD,
            "clipping_range": CLIPPING_RANGE,
            "quantization_range": QUANTIZATION_RANGE,
            "modulus": MODULUS,
            "samples_per_client": SAMPLES,
            "dropout_stage": "masked upload (after sharing keys): pairwise masks rebuilt from key shares",
            "flower_ring": "sorted node ids (hebench's ring)" if SAME_RING else "shuffled",
            "repeats": repeats,
        },
        "note": "Flower's SecAggPlusWorkflow and secaggplus_mod (flwr 1.41) run unchanged over an in-process Grid "
        "(protobuf messages, clients in threads); server CPU is the workflow thread's, per stage; recovery = the "
        "unmask stage. hebench: bench.dropouts.secagg_row on the same vectors and dropped clients, in secagg's "
        "honest-but-curious variant (the protocol Flower runs; the active model's cost: the secagg_active study).",
        "points": points,
        "bell_2020": BELL_2020,
        "at_bell_2020_scale": neighbours_at_scale(),
        "simulation_cross_check": flower_simulation_check() if simulation_check else None,
    }


if __name__ == "__main__":
    import json

    print(json.dumps(secaggplus_flower(clients=(8,), rates=(0.0, 0.3), values=10_000), indent=2, default=str))
