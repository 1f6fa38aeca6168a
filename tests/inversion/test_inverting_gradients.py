"""Inverting Gradients at the reference implementation's settings (breaching), and stronger than before #29."""

from __future__ import annotations

import statistics

import pytest
import torch
import yaml

from hebench.bench.attack_strength import OLD_IG
from hebench.config import DataSpec
from hebench.inversion.attacks.inverting_gradients import step_decay
from hebench.inversion.attacks.matching import total_variation
from hebench.inversion.evaluate import AttackPlan, run_plan
from hebench.inversion.recipes import RECIPES, load_recipe


def test_recipe_is_breachings_invertinggradients():
    """breaching/config/attack/invertinggradients.yaml: cosine-similarity, TV 0.2, Adam 0.1 on the sign,
    boxed, step-lr, randn start; the best iterate by the whole objective."""
    cfg = load_recipe("inverting-gradients")
    assert (cfg.optimizer, cfg.distance, cfg.tv, cfg.lr, cfg.init, cfg.keep) == (
        "signed-adam",
        "cosine",
        0.2,
        0.1,
        "randn",
        "objective",
    )
    assert cfg.known_label and cfg.steps >= 1000
    assert step_decay(24_000) == [8998, 14999, 21015]  # breaching: max_iterations // 2.667, // 1.6, // 1.142


def test_total_variation_is_the_mean_absolute_neighbour_difference():
    x = torch.zeros(1, 3, 4, 4)
    x[..., :, 2:] = 1.0  # one vertical edge: every row has 1 of 3 horizontal pairs differing
    assert float(total_variation(x)) == pytest.approx(1 / 3)
    assert float(total_variation(torch.full((1, 3, 4, 4), 0.7))) == 0.0


@pytest.mark.slow  # two 300-step attacks on a batch of 4 natural patches
def test_reference_settings_beat_the_old_ones_on_a_seeded_batch(tmp_path):
    old = tmp_path / "old.yaml"
    old.write_text(yaml.safe_dump({**yaml.safe_load((RECIPES / "inverting-gradients.yaml").read_text()), **OLD_IG}))
    plan = AttackPlan(
        data=DataSpec(dataset="natural", clients=1),
        batch_size=4,
        images=1,
        seeds=1,
        restarts=1,
        steps=300,
        workers=1,
        device="cpu",
    )
    (new_rec,) = run_plan(AttackPlan(**{**plan.__dict__, "attack": "inverting-gradients"}))
    (old_rec,) = run_plan(AttackPlan(**{**plan.__dict__, "attack": str(old)}))
    new, before = new_rec["ssim_per_image"], old_rec["ssim_per_image"]
    assert new_rec["label_source"] == old_rec["label_source"] == "given"
    assert statistics.fmean(new) > statistics.fmean(before) + 0.05
