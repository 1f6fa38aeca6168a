"""Robbing the Fed: a malicious server's imprint block reads a batch's images out of one client's upload."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from hebench.config import DataSpec
from hebench.data.registry import load_federated
from hebench.errors import ParameterError
from hebench.inversion.attacks import reconstruct_one as reconstruct
from hebench.inversion.attacks.trap_weights import ImprintSpec, plant_imprint, read_out
from hebench.inversion.evaluate import AttackPlan, init_model, run_plan
from hebench.inversion.recipes import load_recipe
from hebench.inversion.views.observation import observe, victim_gradients

NATURAL = DataSpec(dataset="natural", clients=1)
PLAN = AttackPlan(attack="imprint", data=NATURAL, batch_size=4, images=1, seeds=1, restarts=1, workers=1, device="cpu")


def _exact(record: dict, threshold: float = 0.9) -> int:
    return sum(s >= threshold for s in record["ssim_per_image"])


def _natural():
    data = load_federated(NATURAL, 0)
    return data, data.clients[0].x, data.clients[0].y


def test_imprint_recovers_a_batch_of_four_exactly():
    (rec,) = run_plan(PLAN)
    assert len(rec["ssim_per_image"]) == 4 and _exact(rec) >= 3
    assert rec["label_source"] == "inferred" and rec["label_accuracy"] >= 0.75


def test_imprint_reads_the_update_after_local_steps_and_the_fedavg_aggregate():
    (steps,) = run_plan(replace(PLAN, local_steps=3, local_lr=0.1))
    (aggregate,) = run_plan(replace(PLAN, batch_size=2, clients=2, data=DataSpec(dataset="natural", clients=2)))
    assert steps["threat"] == "update after 3 local steps" and _exact(steps) >= 3
    assert len(aggregate["ssim_per_image"]) == 4 and _exact(aggregate) >= 3


def test_without_bins_the_same_upload_gives_no_image():
    """Control: rows that all share one threshold carry only the batch's blend, never one image."""
    data, x, y = _natural()
    model = plant_imprint(init_model("lenet", data.input_shape, 100, 0), data.input_shape, data.test_x, ImprintSpec())
    with torch.no_grad():
        model.imprint.linear.bias.fill_(float(model.imprint.linear.bias[0]))  # every row fires for every image
    images, hits = read_out(model, victim_gradients(model, x[:4], y[:4]), 4)
    from hebench.inversion.scoring.metrics import ssim

    assert hits == 1
    assert max(ssim(x[i].numpy(), images[j].numpy()) for i in range(4) for j in range(4)) < 0.9


def test_the_malicious_model_wraps_the_honest_one_with_quantile_bins():
    data, _, _ = _natural()
    honest = init_model("lenet", data.input_shape, 100, 0)
    before = [p.detach().clone() for p in honest.parameters()]
    spec = ImprintSpec(bins=8, statistic="mean")
    model = plant_imprint(honest, data.input_shape, data.test_x, spec)
    assert all(torch.equal(a, b) for a, b in zip(before, model.honest.parameters(), strict=True))
    assert [p.shape for p in model.parameters()][:2] == [torch.Size([8, 3072]), torch.Size([8])]
    cuts = model.imprint.cuts
    assert bool((cuts[1:] > cuts[:-1]).all())  # cumulative bins, increasing thresholds
    brightness = data.test_x.flatten(1).mean(1)
    assert float(cuts[0]) < float(brightness.min())  # the first row fires for every image
    assert float(cuts[4]) == pytest.approx(float(brightness.mean()), abs=1e-5)  # the median of the fitted normal
    quiet = plant_imprint(honest, data.input_shape, data.test_x, replace(spec, gain=1.0))
    probe = data.test_x[:3]
    assert torch.allclose(model.imprint(probe), quiet.imprint(probe), atol=1e-6)  # gain leaves the forward as it is


def test_readout_needs_the_planted_block_and_he_leaves_the_prior():
    data, x, y = _natural()
    honest = init_model("lenet", data.input_shape, 100, 0)
    shape = data.input_shape
    obs = observe(honest, victim_gradients(honest, x[:4], y[:4]), "raw", None, shape, 100, 4)
    with pytest.raises(ParameterError, match="imprint block"):
        reconstruct(obs, load_recipe("imprint"), 0)
    hidden = observe(honest, victim_gradients(honest, x[:4], y[:4]), "he", None, shape, 100, 4)
    assert reconstruct(hidden, load_recipe("imprint"), 0).prior_only


def test_imprint_recipe_and_bad_imprint_sections(tmp_path):
    cfg = load_recipe("imprint")
    assert cfg.optimizer == "imprint-readout" and cfg.imprint == ImprintSpec(bins=64, statistic="random", gain=10.0)
    bad = tmp_path / "bad.yaml"
    bad.write_text("optimizer: imprint-readout\nimprint: {bins: 1}\n")
    with pytest.raises(ParameterError, match="at least 2 bins"):
        load_recipe(str(bad))
    bad.write_text("optimizer: imprint-readout\n")
    with pytest.raises(ParameterError, match="without an imprint: section"):
        load_recipe(str(bad))
    bad.write_text("optimizer: signed-adam\nimprint: {bins: 8}\n")
    with pytest.raises(ParameterError, match="does not read it out"):
        load_recipe(str(bad))
    bad.write_text("optimizer: imprint-readout\nimprint: {bins: 8, shape: cone}\n")
    with pytest.raises(ParameterError, match="mapping of"):
        load_recipe(str(bad))
