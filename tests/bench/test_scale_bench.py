"""The scale benchmark's pieces: its suites are valid pools, its slopes are per-client fits."""

from __future__ import annotations

import pytest

from hebench.bench.scale import SIM_CLIENTS, SIM_PER_ROUND, SLOPED, scale_suite, sim_suite, slopes
from hebench.config import parse_suite
from hebench.data.registry import load_federated
from hebench.runtime.hosting import plan_hosting


@pytest.mark.parametrize("mode", ["raw", "host-he"])
def test_scale_suites_run_every_client_count_in_a_pool(mode):
    suite = parse_suite(scale_suite(256, mode))
    assert suite.data.clients == 256 and suite.runtime.hosting == "pool"
    assert plan_hosting(suite.runtime, 256, cores=(0, 1)).pooled


def test_slopes_recover_a_per_client_line():
    rows = [{key: 5.0 + 2.0 * n for key in SLOPED} | {"clients": n} for n in (8, 32, 128, 256)]
    fitted = slopes(rows)
    assert set(fitted) == set(SLOPED)
    for fit in fitted.values():
        assert fit["per_client"] == pytest.approx(2.0) and fit["intercept"] == pytest.approx(5.0)


def test_the_flower_sim_point_samples_100_of_1000_clients_of_one_or_two_digits():
    suite = parse_suite(sim_suite(SIM_CLIENTS, SIM_PER_ROUND, "host-he"))
    assert suite.training.clients_per_round * 10 == suite.data.clients == SIM_CLIENTS
    assert len(load_federated(suite.data, suite.seed).clients) == SIM_CLIENTS  # every client gets a shard
    assert {len(c) for c in load_federated(suite.data, suite.seed).clients} == {1, 2}


def test_the_scale_benchmark_measures_compact_he_beside_ckks():
    suite = parse_suite(scale_suite(8, "compact"))
    (config,) = suite.configurations
    assert config.adapter == "seal-bfv" and config.adapter_params["bits"] == 16
