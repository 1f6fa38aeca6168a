"""Clients hosted as threads of a pool: the same FedAvg as one process per client, CPU charged per client."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from hebench.config import parse_suite
from hebench.data.federated import ClientData
from hebench.errors import PartyError
from hebench.results import read_records
from hebench.runtime.base import ConfigurationRun, Started
from hebench.runtime.local.processes import LocalRuntime
from hebench.runtime.runner import Runner
from tests.conftest import INSTALLED

pytestmark = pytest.mark.slow  # end-to-end pooled runs

HE = "tenseal-ckks"
SLOW_CLIENT, HEAVIER = 1, 12  # client 1 trains on its shard repeated 12 times: 12x the steps


def suite(hosting: dict) -> dict:
    configs = [{"mode": "raw"}] + ([{"mode": "host-he", "adapter": HE}] if HE in INSTALLED else [])
    return {
        "name": "pool",
        "seed": 5,
        "data": {"dataset": "digits", "clients": 4},
        "model": {"name": "mlp", "hidden": 8},
        "training": {"rounds": 2, "lr": 0.1},
        "configurations": configs,
        "runtime": hosting,
    }


class OneHeavyClient(LocalRuntime):
    """The local runtime, with one client's shard repeated: that client does more work, with no sleep."""

    def start(self, run: ConfigurationRun, control_recv) -> Started:
        clients = list(run.data.clients)
        c = clients[SLOW_CLIENT]
        clients[SLOW_CLIENT] = ClientData(c.client_id, c.x.repeat(HEAVIER, 1, 1, 1), c.y.repeat(HEAVIER))
        data = dataclasses.replace(run.data, clients=tuple(clients))
        return super().start(dataclasses.replace(run, data=data), control_recv)


def _run(tmp_path_factory, name: str, hosting: dict) -> tuple[Path, list[dict]]:
    out = tmp_path_factory.mktemp(name)
    Runner(parse_suite(suite(hosting)), out, runtime=OneHeavyClient()).run()
    return out, [r.to_json() for r in read_records(out / "results.jsonl").records]


@pytest.fixture(scope="module")
def processes(tmp_path_factory):
    return _run(tmp_path_factory, "processes", {"hosting": "process"})


@pytest.fixture(scope="module")
def pooled(tmp_path_factory):
    return _run(tmp_path_factory, "pool", {"hosting": "pool", "workers": 1})  # one worker hosts all four


def test_pool_and_one_process_per_client_reach_the_same_global_model_every_round(processes, pooled):
    (a, _), (b, _) = processes, pooled
    labels = sorted(p.name for p in (a / "checkpoints").iterdir())
    assert labels and labels == sorted(p.name for p in (b / "checkpoints").iterdir())
    for label in labels:
        for r in range(2):
            x, y = (
                np.load(a / "checkpoints" / label / f"round-{r}.npy"),
                np.load(b / "checkpoints" / label / f"round-{r}.npy"),
            )
            if label == "raw":
                np.testing.assert_array_equal(x, y)  # same updates, same order: bit-identical
            else:
                np.testing.assert_allclose(x, y, atol=1e-4)  # fresh CKKS noise in each run


def test_every_client_and_round_is_recorded_with_its_accounting(processes, pooled):
    for (_, records), accounting in ((processes, "process"), (pooled, "thread")):
        rounds = [r for r in records if r["kind"] == "round"]
        clients = [r for r in records if r["kind"] == "party_round" and r["role"] == "client"]
        assert len(rounds) == 2 * len({r["config"] for r in rounds})
        assert {(r["config"], r["round"], r["client"]) for r in clients} == {
            (c["config"], c["round"], i) for c in rounds for i in range(4)
        }
        assert {r["cpu_accounting"] for r in clients} == {accounting}
        aggregators = [r for r in records if r["kind"] == "party_round" and r["role"] == "aggregator"]
        assert {r["cpu_accounting"] for r in aggregators} == {"process"}
    pooled_clients = [r for r in pooled[1] if r["kind"] == "party_round" and r["role"] == "client"]
    assert {(r["worker"], r["peak_rss_scope"]) for r in pooled_clients} == {("pool-0", "worker")}


def _client_cpu(records: list[dict], label: str) -> dict[int, float]:
    """CPU charged to each client over the configuration: set-up and every round, all phases."""
    cpu: dict[int, float] = {}
    for r in records:
        if r["kind"] in ("party_setup", "party_round") and r["role"] == "client" and r["config"] == label:
            cpu[r["client"]] = cpu.get(r["client"], 0.0) + sum(p["cpu_s"] for p in r["phases"].values())
    return cpu


def test_clients_of_a_pool_are_charged_no_more_than_the_worker_used(pooled):
    _, records = pooled
    workers = [r for r in records if r["kind"] == "pool_worker"]
    assert {r["config"] for r in workers} == {r["config"] for r in records if r["kind"] == "configuration"}
    for worker in workers:
        charged = _client_cpu(records, worker["config"])
        assert sorted(charged) == worker["clients"] == [0, 1, 2, 3]
        assert sum(charged.values()) <= worker["client_thread_cpu_s"] <= worker["process_cpu_s"]


def test_the_client_that_does_more_work_is_charged_more(pooled):
    _, records = pooled
    for label in {r["config"] for r in records if r["kind"] == "configuration"}:
        train = {}
        for r in records:
            if r["kind"] == "party_round" and r["role"] == "client" and r["config"] == label:
                train[r["client"]] = train.get(r["client"], 0.0) + r["phases"]["train"]["cpu_s"]
        others = [cpu for i, cpu in train.items() if i != SLOW_CLIENT]
        assert train[SLOW_CLIENT] > 2 * max(others), train


class OneBrokenClient(LocalRuntime):
    """Client 2's labels are out of range: its training fails in round 0, inside a pool worker."""

    def start(self, run: ConfigurationRun, control_recv) -> Started:
        clients = list(run.data.clients)
        c = clients[2]
        clients[2] = ClientData(c.client_id, c.x, c.y + 1000)
        data = dataclasses.replace(run.data, clients=tuple(clients))
        return super().start(dataclasses.replace(run, data=data), control_recv)


def test_a_failing_client_in_a_pool_is_named_not_its_worker(tmp_path):
    raw = {**suite({"hosting": "pool", "workers": 2}), "configurations": [{"mode": "raw"}]}
    with pytest.raises(PartyError) as err:
        Runner(parse_suite(raw), tmp_path, runtime=OneBrokenClient()).run()
    assert err.value.problem.startswith("client-2 failed"), err.value.problem
