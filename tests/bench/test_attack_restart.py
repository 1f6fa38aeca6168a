"""The attack-speed benchmark runs and reports seconds per restart for each setting it measured (serial, the
serial worker pool, the batched engine)."""

from __future__ import annotations

import json

import pytest

from hebench.bench.attack_restart import attack_restart


@pytest.mark.slow  # about a minute and a half on 2 shared cores (ResNet-18 double backprop)
def test_attack_restart_reports_serial_and_parallel_rows():
    result = attack_restart(steps=2, restarts=1, workers=2)
    settings = [row["setting"] for row in result["rows"]]
    assert settings[:3] == ["cpu, 1 thread, serial", "cpu, 2 worker processes", "cpu, batched, 2 worker processes"]
    assert all(row["s_per_restart"] > 0 for row in result["rows"])
    assert result["rows"][1]["throughput_s_per_restart"] > 0 and result["inverting_gradients_resnet18_s_per_step"] > 0
    json.dumps(result)  # the suite writes it as JSON
