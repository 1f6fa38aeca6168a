"""Flower's own SecAgg+ beside hebench's secagg: the harness runs Flower's workflow and mod and gets the survivors'
sum; the Bell et al. comparison is computed from hebench's ring."""

from __future__ import annotations

import numpy as np

from hebench.bench.dropouts import dropped_clients
from hebench.bench.secaggplus_flower import (
    CLIPPING_RANGE,
    QUANTIZATION_RANGE,
    client_vectors,
    flower_secaggplus_round,
    median_row,
    secaggplus_flower,
)
from hebench.bench.support.secaggplus_bell import BELL_2020, ring_failure_drawn


def test_flowers_secaggplus_returns_the_plaintext_sum_of_the_survivors():
    row = flower_secaggplus_round(4, {1}, values=100, num_shares=3, threshold=2, keep_aggregate=True)
    assert "failed" not in row
    assert row["flower_dropped_clients"] == [1]  # the stopped node reached Flower's workflow as a dropout
    vectors = client_vectors(4, 100)
    survivors = np.sum([vectors[i].astype(np.float64) for i in (0, 2, 3)], axis=0)
    everyone = survivors + vectors[1]
    step = 2 * CLIPPING_RANGE / QUANTIZATION_RANGE
    got = row["aggregate"] * 3  # Flower returns the FedAvg (equal weights: the mean) of the survivors
    assert np.max(np.abs(got - survivors)) < 3 * step
    assert np.max(np.abs(got - everyone)) > 100 * step  # the dropped client's update is not in it
    assert row["recovery_bytes"] > 0 and row["server_bytes"] > row["recovery_bytes"]
    assert set(row["stages"]) == {"setup", "share_keys", "collect_masked_vectors", "unmask"}


def test_too_many_dropped_holders_halt_flowers_round_and_the_row_says_so():
    row = flower_secaggplus_round(4, {1, 2}, values=16, num_shares=3, threshold=2)  # 1's two holders: 0 alive, 2 gone
    assert "halted" in row["failed"] and "round_cpu_s" not in row


def test_a_ring_fails_as_the_drawn_dropouts_say():
    assert ring_failure_drawn(200, 0.0, 7, draws=3) == 0.0
    assert ring_failure_drawn(200, 0.9, 7, draws=3) == 1.0


def test_the_benchmark_measures_both_implementations_on_the_same_dropped_clients():
    result = secaggplus_flower(
        clients=(6,), rates=(0.0, 0.3), values=64, prgs=("flwr-32bit",), repeats=2, simulation_check=False
    )
    assert result["bell_2020"] is BELL_2020 and "abstract" in BELL_2020["note"]
    assert "not a measurement" in result["at_bell_2020_scale"]["label"]
    for point in result["points"]:
        drop = dropped_clients(6, point["dropout"])
        assert point["flower"]["dropped_clients"] == sorted(drop)
        assert point["hebench"][0]["dropped"] == len(drop) == point["dropped"]
        if "failed" not in point["flower"]:
            assert point["flower"]["flower_dropped_clients"] == sorted(drop)
            assert point["flower"]["sum_max_error"] < point["flower"]["sum_error_bound"]
            ratios = point["hebench_over_flower"]["flwr-32bit"]
            assert ratios["round_cpu"] > 0 and ratios["server_bytes"] > 0


def test_repeated_rounds_report_the_median_of_every_figure_and_keep_a_failure():
    rows = [{"cpu_s": c, "stages": {"unmask": {"cpu_s": c}}, "clients": 8} for c in (3.0, 1.0, 2.0)]
    assert median_row(rows) == {"cpu_s": 2.0, "stages": {"unmask": {"cpu_s": 2.0}}, "clients": 8, "repeats": 3}
    assert median_row([*rows, {"failed": "halted"}])["failed"] == "halted"
