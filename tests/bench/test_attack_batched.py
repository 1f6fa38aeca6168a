"""The batched-engine benchmark writes strength rows (both engines, compared), CPU speed rounds with their load,
and a GPU row that says when it was not measured."""

from __future__ import annotations

import json

import pytest
import torch

from hebench.bench.attack_batched import BatchedSize, attack_batched

TINY = BatchedSize(
    ig_steps=3, ig_single_images=1, ig_batches_of_4=1, dlg_images=1, dlg_restarts=2, dlg_steps=2,
    speed_restarts=4, speed_steps=1, speed_rounds=1, gpu_restarts=8,
)  # fmt: skip


@pytest.mark.slow  # a few 2-3 step attacks with both engines, and one speed round: minutes on 2 shared cores
def test_attack_batched_reports_strength_speed_and_the_gpu_row():
    result = attack_batched(TINY, workers=2)
    rows = result["strength"]
    assert [r["plan"].split(" (")[0] for r in rows] == [
        "inverting-gradients, batch 1",
        "inverting-gradients, batch 4",
        "dlg, raw",
        "dlg, random 10 %, mask-aware",
    ]
    for row in rows:
        assert row["serial"]["success"]["n"] == row["batched"]["success"]["n"] > 0
        assert row["success_difference"]["low"] <= row["success_difference"]["high"] and row["verdict"]
    speed = result["cpu_speed"]
    (round_,) = speed["rounds"]
    assert round_["ratio"] > 0 and len(round_["load_avg_before"]) == 3 and speed["workers"] == 2
    gpu = result["gpu_speed"]
    assert gpu["measured"] is torch.cuda.is_available()
    if not gpu["measured"]:
        assert gpu["reason"] == "not measured: no GPU"
    json.dumps(result)  # written as JSON
