"""Projected engine times come from a device's calibration file, labelled, never mixed with measurements."""

from __future__ import annotations

import pytest

from hebench.analysis.summary import project

CALIBRATION = {
    "environment": {"cpu_model": "BlueField-3 Arm A78"},
    "adapters": {
        "tenseal-ckks": {
            "4096": {"operations": {"encrypt": {"wall_s_per_value": 2e-6}, "decrypt": {"wall_s_per_value": 1e-6}}},
            "1206590": {
                "operations": {
                    "encrypt": {"wall_s_per_value": 3e-6},
                    "decrypt": {"wall_s_per_value": 1e-6},
                    "serialize": {"wall_s_per_value": 5e-7},
                }
            },
        }
    },
}


def test_projection_uses_the_closest_calibrated_size():
    proj = project(CALIBRATION, "tenseal-ckks", 1_000_000)
    assert proj is not None
    assert proj.projected is True and proj.device == "BlueField-3 Arm A78" and proj.calibrated_at_size == 1206590
    assert proj.phases_s["encrypt"] == pytest.approx(3.0) and proj.total_s == pytest.approx(4.5)


def test_no_projection_without_calibration_for_the_adapter():
    assert project(CALIBRATION, "paillier", 10) is None
