"""The defences benchmark measures what it says, on a small vector (no timing threshold: figures only)."""

from __future__ import annotations

from hebench.bench.threat_defences import decryptor_cost, model_check_cost


def test_model_check_costs_some_bytes_per_neighbour_and_is_measured():
    out = model_check_cost(size=2000, clients=3)
    assert out["client_extra_bytes"] > 0  # a sealed digest per neighbour
    assert out["with"]["client_cpu_s"] > 0 and out["without"]["client_cpu_s"] > 0 and out["client_cpu_ratio"] > 0


def test_decryptor_cost_compares_both_clients_on_one_vector():
    out = decryptor_cost(size=5000)
    if out is None:  # TenSEAL missing
        return
    assert out["aggregate_bytes"]["decryptor_he"] < out["aggregate_bytes"]["host_he"]
    assert out["decryptor_cpu_s"] > 0 and out["client_cpu_ratio"] > 0
