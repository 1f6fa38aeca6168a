"""The dropouts benchmark: every protection at every rate, the dropped clients drawn from the fault seed."""

from __future__ import annotations

from hebench.bench.dropouts import dropouts, dropped_clients
from hebench.faults import FaultsSpec, fault_for


def test_the_benchmark_measures_every_protection_at_every_rate_on_the_drawn_clients():
    result = dropouts(clients=(6,), rates=(0.0, 0.3), values=256)
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
