"""Many clients at once: every run completes with every record (pool, and one process per client)."""

from __future__ import annotations

import pytest

from hebench.config import parse_suite
from hebench.results import read_records
from hebench.runtime.runner import Runner
from tests.conftest import INSTALLED

CLIENTS = 32


def many(hosting: str, configs: list[dict]) -> dict:
    return {
        "name": "many",
        "data": {"dataset": "digits", "clients": CLIENTS},
        "model": {"name": "mlp", "hidden": 8},
        "training": {"rounds": 2, "lr": 0.1},
        "configurations": configs,
        "runtime": {"hosting": hosting},
        "measure": {"setup_timeout_s": 240},
    }


def assert_complete(records: list[dict], rounds: int) -> None:
    labels = {r["config"] for r in records if r["kind"] == "configuration"}
    done = {(r["config"], r["round"]) for r in records if r["kind"] == "round"}
    assert done == {(label, r) for label in labels for r in range(rounds)}
    setups = {(r["config"], r["client"]) for r in records if r["kind"] == "party_setup" and r["role"] == "client"}
    assert setups == {(label, i) for label in labels for i in range(CLIENTS)}
    clients = {(r["config"], r["round"], r["client"]) for r in records if r["kind"] == "party_round" and "client" in r}
    assert clients == {(label, r, i) for label, r in done for i in range(CLIENTS)}


@pytest.mark.slow
@pytest.mark.parametrize("attempt", range(3))
def test_32_clients_in_a_pool_start_at_once_and_finish_every_round(tmp_path, attempt):
    configs = [{"mode": "raw"}] + (
        [{"mode": "host-he", "adapter": "tenseal-ckks"}] if "tenseal-ckks" in INSTALLED else []
    )
    Runner(parse_suite(many("pool", configs)), tmp_path).run()
    assert_complete([r.to_json() for r in read_records(tmp_path / "results.jsonl").records], 2)


@pytest.mark.slow
def test_32_clients_each_in_its_own_process_start_at_once(tmp_path):
    # guards the listen backlog: with a backlog of 1, runs of 8+ client processes stalled at set-up
    suite = many("process", [{"mode": "raw"}])
    Runner(parse_suite({**suite, "training": {"rounds": 1}}), tmp_path).run()
    assert_complete([r.to_json() for r in read_records(tmp_path / "results.jsonl").records], 1)


def test_femnist_writers_are_all_clients_and_a_few_are_sampled_each_round(tmp_path, femnist_sample):
    suite = {
        "name": "leaf",
        "data": {"dataset": "femnist", "clients": "all", "path": str(femnist_sample)},
        "model": {"name": "mlp", "hidden": 8},
        "training": {"rounds": 2, "clients_per_round": 2, "lr": 0.1},
        "configurations": [{"mode": "raw"}],
        "runtime": {"hosting": "pool", "workers": 2},
    }
    Runner(parse_suite(suite), tmp_path).run()
    records = [r.to_json() for r in read_records(tmp_path / "results.jsonl").records]
    run = next(r for r in records if r["kind"] == "run")
    assert run["data"]["clients"] == 5 and run["suite"]["data"]["clients"] == 5  # every writer of the sample
    aggregator = [r for r in records if r["kind"] == "party_round" and r["role"] == "aggregator"]
    assert [len(r["selected"]) for r in aggregator] == [2, 2]
    trained = [
        r for r in records if r["kind"] == "party_round" and r.get("role") == "client" and "train" in r["phases"]
    ]
    assert sorted((r["round"], r["client"]) for r in trained) == sorted(
        (r["round"], i) for r in aggregator for i in r["selected"]
    )
    assert {r["worker"] for r in records if r["kind"] == "pool_worker"} == {"pool-0", "pool-1"}
