"""The dropouts benchmark: every protection at every rate, the dropped clients drawn from the fault seed."""

from __future__ import annotations

import pytest

from hebench.bench.dropouts import SECAGG_PLUS, dropouts, dropped_clients, growth_exponent, secagg_scaling
from hebench.faults import FaultsSpec, fault_for


def test_the_benchmark_measures_every_protection_at_every_rate_on_the_drawn_clients():
    result = dropouts(clients=(6,), rates=(0.0, 0.3), values=256, scaling=(4, 6))
    rows = result["rows"]
    assert {r["protection"] for r in rows} >= {"secagg", "raw"}
    assert {(r["protection"], r["dropout"]) for r in rows} == {
        (p, d) for p in {r["protection"] for r in rows} for d in (0.0, 0.3)
    }
    spec = FaultsSpec(dropout=0.3, dropout_phase="after_train", seed=7).resolved(0)
    drawn = {i for i in range(6) if fault_for(spec, 0, i).drops}
    assert dropped_clients(6, 0.3) == drawn
    for r in rows:
        assert r["dropped"] == (len(drawn) if r["dropout"] else 0)
        if "failed" not in r:
            assert r["round_cpu_s"] >= 0 and r["aggregator_bytes"] > 0


def test_the_growth_exponent_is_the_slope_of_log_cost_against_log_n():
    assert growth_exponent([10, 20, 40], [3.0 * n**2 for n in (10, 20, 40)]) == pytest.approx(2.0)
    assert growth_exponent([10, 20, 40], [5.0, 5.0, 5.0]) == pytest.approx(0.0, abs=1e-12)
    assert growth_exponent([10], [1.0]) is None  # one point fits no slope


def test_secagg_is_compared_with_secagg_plus_by_growth_in_n_on_stated_parameters():
    result = secagg_scaling((4, 6, 8), 0.3, values=64)
    params = result["parameters"]
    assert params["clients"] == [4, 6, 8] and params["dropout"] == 0.3 and params["values_per_update"] == 64
    assert params["neighbours"] == params["num_shares"] - 1
    assert result["secagg_plus"] is SECAGG_PLUS and "Bell" in SECAGG_PLUS["reference"]
    done = [r for r in result["rows"] if "failed" not in r]
    assert len(done) >= 2  # enough points to fit
    ns = [r["clients"] for r in done]
    assert result["measured_exponent"]["server_cpu"] == growth_exponent(ns, [r["round_cpu_s"] for r in done])
    assert result["measured_exponent"]["client_bytes"] == growth_exponent(ns, [r["client_bytes"] for r in done])
    for r in done:
        assert r["dropped"] == len(dropped_clients(r["clients"], 0.3))
        assert r["client_cpu_s"] > 0 and r["client_bytes"] > 0
        assert set(r["client_phases_cpu_s"]) == {
            "advertise_keys",
            "share_keys",
            "masked_upload",
            "consistency",
            "unmask",
        }  # active model
