from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from hebench.data.digits import load_digits_tensors
from hebench.errors import ParameterError
from hebench.models import build_model
from hebench.protections.selective.masks import layer_mask, local_map, sensitivity_map, top_fraction

X, Y = load_digits_tensors()


def test_sensitivity_of_one_sample_is_the_absolute_gradient():
    model = build_model("lenet", (1, 28, 28), 10).eval()
    grads = torch.autograd.grad(F.cross_entropy(model(X[:1]), Y[:1]), list(model.parameters()))
    expected = torch.cat([g.abs().reshape(-1) for g in grads]).numpy()
    np.testing.assert_allclose(sensitivity_map(model, X[:1], Y[:1]), expected, atol=1e-7)


def test_sensitivity_averages_over_samples():
    model = build_model("mlp", (1, 28, 28), 10).eval()
    two = sensitivity_map(model, X[:2], Y[:2])
    mean = (sensitivity_map(model, X[:1], Y[:1]) + sensitivity_map(model, X[1:2], Y[1:2])) / 2
    np.testing.assert_allclose(two, mean, atol=1e-7)


def test_top_fraction_and_ratio_bounds():
    scores = np.array([0.1, 0.9, 0.5, 0.7])
    assert top_fraction(scores, 0.5).tolist() == [False, True, False, True]
    assert top_fraction(scores, 0.0).sum() == 0 and top_fraction(scores, 1.0).all()
    with pytest.raises(ParameterError):
        top_fraction(scores, 1.5)


def test_layer_masks_first_and_last():
    model = build_model("mlp", (1, 28, 28), 10, hidden=4)
    mask = layer_mask(model, ("first", "last"))
    assert mask.sum() == model.net[1].weight.numel() + 4 + model.net[3].weight.numel() + 10 == mask.size
    assert layer_mask(model, ("net.3",)).sum() == 4 * 10 + 10
    with pytest.raises(ParameterError, match="matches no parameter"):
        layer_mask(model, ("conv9",))


def test_random_maps_are_seeded_and_maps_are_scaled():
    model = build_model("mlp", (1, 28, 28), 10)
    a, b = local_map("random", model, X, Y, 3), local_map("random", model, X, Y, 3)
    assert np.array_equal(a, b) and a.max() == pytest.approx(1.0)
