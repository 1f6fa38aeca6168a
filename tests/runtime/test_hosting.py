"""Where clients run: one process each for a few, a pool of workers (one per core by default) for many."""

from __future__ import annotations

import pytest

from hebench.config import AUTO_POOL_ABOVE, RuntimeSpec, parse_suite
from hebench.errors import SuiteError
from hebench.runtime.hosting import plan_hosting


def test_auto_gives_each_of_a_few_clients_its_own_process():
    assert not plan_hosting(RuntimeSpec(), AUTO_POOL_ABOVE).pooled
    assert plan_hosting(RuntimeSpec(), AUTO_POOL_ABOVE + 1, cores=(0, 1)).pooled


def test_a_pool_defaults_to_one_worker_per_core_and_covers_every_client_once_in_blocks():
    hosting = plan_hosting(RuntimeSpec(hosting="pool"), 257, cores=(0, 1, 2))
    groups = hosting.groups
    assert len(groups) == 3
    assert [i for g in groups for i in g] == list(range(257))  # contiguous: client-0 (the evaluator) in pool-0
    assert max(map(len, groups)) - min(map(len, groups)) <= 1
    assert list(hosting.workers()) == ["pool-0", "pool-1", "pool-2"]


def test_workers_size_the_pool_but_never_exceed_the_clients():
    assert len(plan_hosting(RuntimeSpec(hosting="pool", workers=4), 64, cores=(0, 1)).groups) == 4
    assert len(plan_hosting(RuntimeSpec(hosting="pool", workers=4), 2).groups) == 2
    assert not plan_hosting(RuntimeSpec(hosting="process"), 300).pooled


def test_workers_with_one_process_per_client_is_refused_with_the_field_named():
    raw = {"name": "x", "runtime": {"hosting": "process", "workers": 2}, "configurations": [{"mode": "raw"}]}
    with pytest.raises(SuiteError) as err:
        parse_suite(raw)
    assert "runtime" in err.value.problem and "workers" in err.value.problem


def test_all_clients_is_for_femnist_writers_and_resolves_against_the_data():
    with pytest.raises(SuiteError) as err:
        parse_suite({"name": "x", "data": {"clients": "all"}, "configurations": [{"mode": "raw"}]})
    assert "FEMNIST" in err.value.problem
    suite = parse_suite(
        {
            "name": "x",
            "data": {"dataset": "femnist", "clients": "all"},
            "training": {"clients_per_round": 10},
            "configurations": [{"mode": "raw"}],
        }
    )
    assert suite.with_clients(3500).data.clients == 3500
    with pytest.raises(SuiteError) as err:
        suite.with_clients(5)  # fewer writers than clients sampled per round
    assert "clients_per_round" in err.value.problem
