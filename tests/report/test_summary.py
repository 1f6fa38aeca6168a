"""The per-configuration summary: typed rows, offload compared with its own host-he twin, projections."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hebench.analysis.summary import SummaryRow, project, summarize_run
from hebench.results import read_records

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
V1 = FIXTURES / "run-v1"


def rows(folder: Path, calibration: dict | None = None) -> dict[str, SummaryRow]:
    return {r.config: r for r in summarize_run(read_records(folder / "results.jsonl").records, calibration)}


def test_named_offload_configuration_is_compared_with_its_host_he_twin():
    # run-v1 names its configurations: he-ckks (host-he) and nic-ckks (offload), same adapter and settings
    by_label = rows(V1)
    nic, he = by_label["nic-ckks"], by_label["he-ckks"]
    assert nic.host_he_twin == "he-ckks"
    assert nic.host_cpu_saved_vs_host_he == pytest.approx(1 - nic.client_cpu_s_per_round / he.client_cpu_s_per_round)
    assert nic.host_cpu_saved_vs_host_he != 0.0 and nic.round_time_vs_host_he != 1.0


def test_offload_twin_needs_the_same_selective_settings():
    by_label = rows(V1)
    sel = by_label["host-he/tenseal-ckks/sel-random-0.2"]
    assert sel.selective is not None and sel.selective["ratio"] == 0.2 and sel.encrypted_fraction == 0.2
    assert by_label["nic-ckks"].twin_key() != sel.twin_key()


def test_unnamed_offload_still_finds_its_twin():
    assert rows(FIXTURES / "run-offload")["offload/tenseal-ckks"].host_he_twin == "host-he/tenseal-ckks"


def test_projection_only_with_a_calibration():
    calibration = json.loads((V1 / "calibration.json").read_text())
    nic = rows(V1, calibration)["nic-ckks"]
    proj = nic.projected_engine_s
    assert proj is not None and proj.projected and proj.device == calibration["environment"]["cpu_model"]
    assert proj.total_s == pytest.approx(sum(proj.phases_s.values())) and "encrypt" in proj.phases_s
    assert rows(V1)["nic-ckks"].projected_engine_s is None
    assert rows(V1, calibration)["he-ckks"].projected_engine_s is None  # measured host-he needs no projection


def test_row_is_frozen_and_serializable():
    row = rows(V1)["raw"]
    with pytest.raises(AttributeError):
        row.accuracy = 1.0  # type: ignore[misc]
    assert json.loads(json.dumps(row.to_json()))["config"] == "raw"


def test_projection_uses_the_closest_calibrated_size():
    calibration = {
        "environment": {"cpu_model": "BlueField-3 Arm A78"},
        "adapters": {"x": {"10": {"operations": {"encrypt": {"wall_s_per_value": 2.0}}}, "1000": {"operations": {}}}},
    }
    proj = project(calibration, "x", 12)
    assert proj is not None and proj.calibrated_at_size == 10 and proj.total_s == pytest.approx(24.0)
    assert project(calibration, "paillier", 12) is None
