"""The main-command benchmark splits the command's wall time by the records' own timestamps."""

from __future__ import annotations

import pytest

from hebench.bench.main_command import phases_of


def test_wall_time_is_split_into_configurations_attacks_and_the_rest():
    records = [
        {"kind": "run", "time": 100.0},
        {"kind": "configuration", "config": "raw", "time": 101.0},
        {"kind": "configuration", "config": "offload/tenseal-ckks", "time": 105.0},
        {"kind": "attack_summary", "time": 118.0},
        {"kind": "attack_campaign", "time": 120.0, "wall_s": 5.0},
    ]
    phases = phases_of(records, wall_s=30.0)
    assert phases["configuration raw"] == 4.0
    assert phases["configuration offload/tenseal-ckks"] == 10.0  # until the attacks began (120 - 5)
    assert phases["attacks"] == 5.0
    assert sum(phases.values()) == pytest.approx(30.0)
