"""The batched engine attacks as the serial one does, restart by restart: the same starts, the same iterates (in
float64, to rounding), the same best iterate chosen by the attacker's own loss; images sharing a model batch
together; a restart that diverges stops alone."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
import torch

from hebench.data.digits import load_digits_tensors
from hebench.inversion.attacks import reconstruct
from hebench.inversion.evaluate import init_model
from hebench.inversion.recipes import load_recipe
from hebench.inversion.views.observation import Observation, observe, victim_gradients

SHAPE = (1, 28, 28)


@pytest.fixture(scope="module")
def views() -> list[Observation]:
    """Two victims' gradients on one float64 LeNet (two images sharing a model, as in a campaign)."""
    x, y = load_digits_tensors()
    model = init_model("lenet", SHAPE, 10, seed=0).double()
    return [
        observe(model, victim_gradients(model, x[i : i + 1].double(), y[i : i + 1]), "raw", None, SHAPE, 10, 1)
        for i in (0, 1)
    ]


def _close(a: list[float], b: list[float], rel: float) -> bool:
    return len(a) == len(b) and all(math.isclose(u, v, rel_tol=rel, abs_tol=1e-12) for u, v in zip(a, b, strict=True))


@pytest.mark.parametrize("recipe", ["dlg", "idlg"])
def test_batched_lbfgs_restarts_follow_the_serial_engine(views, recipe):
    # Arrange: 4 restarts over two images; 2 L-BFGS steps (40 evaluations: DLG without a line search is chaotic
    # past that, in the serial engine itself, at float64 rounding)
    cfg = replace(load_recipe(recipe), steps=2)
    obs, seeds = [views[0], views[0], views[1], views[1]], [3, 4, 5, 6]
    # Act
    serial = reconstruct(obs, replace(cfg, engine="serial"), seeds)
    batched = reconstruct(obs, cfg, seeds)
    # Assert: each restart's losses, kept image and labels as the serial engine's
    for s, b in zip(serial, batched, strict=True):
        assert _close(s.trace, b.trace, 1e-8), (s.trace, b.trace)
        assert torch.allclose(s.images, b.images, atol=1e-7) and torch.equal(s.labels, b.labels)
        assert s.label_source == b.label_source and b.batch == 4 and s.batch == 1


def test_batched_inverting_gradients_restarts_follow_the_serial_engine(views):
    cfg = replace(load_recipe("inverting-gradients"), steps=6)
    obs, seeds = [views[0], views[1], views[1]], [0, 1, 2]
    serial = reconstruct(obs, replace(cfg, engine="serial"), seeds)
    batched = reconstruct(obs, cfg, seeds)
    for s, b in zip(serial, batched, strict=True):
        assert _close(s.trace, b.trace, 1e-9) and math.isclose(s.grad_loss, b.grad_loss, rel_tol=1e-9)
        assert torch.allclose(s.images, b.images, atol=1e-9)


@pytest.mark.parametrize("recipe", ["dlg", "inverting-gradients"])
def test_a_restart_that_diverges_spoils_none_of_the_others(views, recipe):
    # Arrange: the same batch twice, once with the second restart's target poisoned (NaN)
    cfg = replace(load_recipe(recipe), steps=2)
    poisoned = replace(views[1], gradients=tuple(torch.full_like(g, math.nan) for g in views[1].gradients))
    clean = reconstruct([views[0], views[1], views[0]], cfg, [0, 1, 2])
    # Act
    dirty = reconstruct([views[0], poisoned, views[0]], cfg, [0, 1, 2])
    # Assert: the poisoned restart stopped, not finite; the others are bit for bit what they were
    assert not dirty[1].finite and torch.isfinite(dirty[1].images).all()
    for r in (0, 2):
        assert dirty[r].finite and dirty[r].trace == clean[r].trace and torch.equal(dirty[r].images, clean[r].images)


def test_an_exploding_step_is_caught_and_the_best_finite_iterate_kept(views):
    cfg = replace(load_recipe("dlg"), steps=30, lr=1e8)
    for rec in reconstruct([views[0]] * 3, cfg, [0, 1, 2]):
        assert torch.isfinite(rec.images).all() and (not rec.finite or math.isfinite(rec.grad_loss))


def test_a_view_with_nothing_to_match_gets_the_prior_inside_a_batch(views):
    hidden = replace(views[0], gradients=None)
    out = reconstruct([views[0], hidden, views[1]], replace(load_recipe("idlg"), steps=1), [0, 1, 2])
    assert out[1].prior_only and out[1].label_source == "none"
    assert not out[0].prior_only and not out[2].prior_only and out[0].batch == out[2].batch == 2
