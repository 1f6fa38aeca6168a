"""The attack-strength benchmark writes IG (reference and old settings, paired) and imprint rows as JSON."""

from __future__ import annotations

import json

import pytest

from hebench.bench.attack_strength import REFERENCE, StrengthSize, attack_strength

TINY = StrengthSize(ig_steps=3, ig_single_images=2, ig_batches_of_4=1, imprint_batches=1, imprint_seeds=1)


@pytest.mark.slow  # a few 3-step attacks and the imprint read-outs, scored: about a minute on 2 shared cores
def test_attack_strength_reports_both_ig_settings_against_the_goal_and_the_imprint_rows():
    result = attack_strength(workers=1, size=TINY)
    ig = result["inverting_gradients"]
    assert [(r["settings"], r["batch_size"]) for r in ig] == [
        ("reference (recipe)", 1),
        ("before #29", 1),
        ("reference (recipe)", 4),
        ("before #29", 4),
    ]
    assert all(r["goal_mean_ssim"] == REFERENCE[f"ssim_batch_{r['batch_size']}"] and r["verdict"] for r in ig)
    assert [g["n"] for g in result["inverting_gradients_gain"]] == [2, 4]
    imprint = {r["threat"]: r for r in result["imprint"]}
    assert imprint["one gradient, batch 16"]["exact"]["n"] == 16
    assert imprint["one gradient, batch 4"]["exact"]["k"] >= 3  # the read-out is exact, whatever the size
    json.dumps(result)  # the suite writes it as JSON
