"""What the attacker sees is what the client computed; the attacker views differ only where stated."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from hebench.config import TrainingSpec
from hebench.data.natural import load_natural_tensors
from hebench.fl.training import train_locally
from hebench.inversion.attacks.upload import dummy_upload
from hebench.inversion.evaluate import init_model
from hebench.inversion.views.local_update import LocalTraining, simulate_update
from hebench.inversion.views.observation import observe, victim_gradients, victim_update
from hebench.protections.selective.masks import random_map, top_fraction

SHAPE = (3, 32, 32)


@pytest.fixture(scope="module")
def patches() -> tuple[torch.Tensor, torch.Tensor]:
    x, y = load_natural_tensors()
    return x[:16], y[:16]


def _real_update(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor, spec: TrainingSpec, seed: int):
    """The client's upload exactly as a hebench client computes it: train_locally, then w_E - w_0."""
    twin = copy.deepcopy(model)
    before = [p.detach().clone() for p in twin.parameters()]
    train_locally(twin, x, y, spec, seed)
    return [p.detach() - b for p, b in zip(twin.parameters(), before, strict=True)]


def _close(a, b, tol: float = 1e-4) -> bool:
    return all(torch.allclose(u, v, rtol=tol, atol=tol * float(v.abs().max())) for u, v in zip(a, b, strict=True))


def test_attacker_views_differ_only_in_the_loss_mask(patches):
    x, y = patches
    model = init_model("lenet", SHAPE, 100, seed=0)
    grads = victim_gradients(model, x[:1], y[:1])
    mask = top_fraction(random_map(model, 0), 0.3)
    aware = observe(model, grads, "selective", mask, SHAPE, 100, 1, attacker="mask-aware")
    zeros = observe(model, grads, "selective", mask, SHAPE, 100, 1, attacker="fedml-he-zeros")
    assert all(torch.equal(a, b) for a, b in zip(aware.gradients, zeros.gradients, strict=True))
    assert zeros.masks is None and aware.masks is not None
    assert all(torch.equal(m, v) for m, v in zip(aware.masks, zeros.visible, strict=True))
    assert aware.visible_fraction == zeros.visible_fraction == pytest.approx(0.7, abs=1e-3)


def test_noise_view_keeps_the_plaintext_and_fills_only_the_ciphertext(patches):
    x, y = patches
    model = init_model("lenet", SHAPE, 100, seed=0)
    grads = victim_gradients(model, x[:1], y[:1])
    mask = top_fraction(random_map(model, 1), 0.5)
    noisy = observe(model, grads, "selective", mask, SHAPE, 100, 1, attacker="fedml-he-noise", seed=3)
    assert noisy.masks is None
    for g, n, v in zip(grads, noisy.gradients, noisy.visible, strict=True):
        assert torch.equal(n[v], g[v])
        hidden = ~v
        if hidden.any():
            assert not torch.allclose(n[hidden], g[hidden]) and bool((n[hidden] != 0).any())


@pytest.mark.parametrize("batch", [1, 4, 8])
def test_one_step_observation_is_the_clients_update(patches, batch):
    x, y = patches[0][:batch], patches[1][:batch]
    model = init_model("lenet", SHAPE, 100, seed=1)
    lr = 0.05
    real = _real_update(model, x, y, TrainingSpec(local_steps=1, batch_size=batch, lr=lr), seed=0)
    seen = victim_update(model, [x], [y], None)
    assert _close([-lr * g for g in seen], real)


def test_multi_step_observation_is_the_clients_update_and_the_attacker_replays_it(patches):
    x, y = patches
    model = init_model("lenet", SHAPE, 100, seed=2)
    local = LocalTraining(steps=5, lr=0.05, batch=4, seed=7)
    real = _real_update(model, x, y, TrainingSpec(local_steps=5, batch_size=4, lr=0.05), seed=7)
    seen = victim_update(model, [x], [y], local)
    assert _close([-local.lr * g for g in seen], real)
    replay = simulate_update(model, x, y, local, create_graph=False)  # the attacker, fed the true data
    assert _close(replay, seen)
    other_order = simulate_update(model, x, y, LocalTraining(5, 0.05, 4, seed=8), create_graph=False)
    assert not _close(other_order, seen)  # the batch order matters, and the attacker is told it


def test_aggregate_is_the_fedavg_mean_and_the_attacker_simulates_every_client(patches):
    x, y = patches
    model = init_model("lenet", SHAPE, 100, seed=3)
    local = LocalTraining(steps=2, lr=0.1, seed=0)
    xs, ys = [x[:4], x[4:8]], [y[:4], y[4:8]]
    mean = victim_update(model, xs, ys, local)
    each = [victim_update(model, [a], [b], local) for a, b in zip(xs, ys, strict=True)]
    assert _close(mean, [(u + v) / 2 for u, v in zip(*each, strict=True)])
    obs = observe(model, mean, "raw", None, SHAPE, 100, 4, clients=2, local=local)
    assert obs.images == 8
    assert _close([t.detach() for t in dummy_upload(obs, x[:8].clone().requires_grad_(True), y[:8])], mean)


def test_single_gradient_matches_the_direct_gradient(patches):
    x, y = patches
    model = init_model("lenet", SHAPE, 100, seed=4)
    g = victim_gradients(model, x[:2], y[:2])
    assert _close(victim_update(model, [x[:2]], [y[:2]], LocalTraining(steps=1, lr=0.3)), g)
    assert np.isclose(
        float(sum(t.abs().sum() for t in g)),
        float(sum(t.abs().sum() for t in victim_update(model, [x[:2]], [y[:2]], None))),
    )
