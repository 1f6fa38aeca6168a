"""The attacker's view of a dp configuration: each client's upload under the clients' own noise model."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from hebench.config import DPSpec
from hebench.inversion.views.observation import victim_gradients
from hebench.protections.dp.attacker_view import dp_upload


@pytest.fixture
def victim():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 10))
    return model, torch.randn(2, 1, 8, 8) * 10, torch.tensor([1, 7])


def _flat(ts) -> torch.Tensor:
    return torch.cat([t.reshape(-1) for t in ts])


def test_client_level_view_is_clipped_in_update_units(victim):
    model, x, y = victim
    lr = 0.1
    spec = DPSpec(level="client", clip=0.01, noise_multiplier=0.0)
    seen = dp_upload(model, x, y, None, spec, lr, np.random.default_rng(0))
    clean = victim_gradients(model, x, y)
    assert float(_flat(clean).norm()) * lr > 0.01  # the clip binds
    assert float(_flat(seen).norm()) * lr == pytest.approx(0.01, rel=1e-4)
    cos = torch.nn.functional.cosine_similarity(_flat(seen), _flat(clean), dim=0)
    assert float(cos) == pytest.approx(1.0, abs=1e-5)  # same direction: only the scale changed


def test_client_level_view_carries_noise_at_the_stated_scale(victim):
    model, x, y = victim
    lr, spec = 0.1, DPSpec(level="client", clip=1.0, noise_multiplier=2.0)
    seen = _flat(dp_upload(model, x, y, None, spec, lr, np.random.default_rng(1)))
    clean = _flat(victim_gradients(model, x, y))
    scale = min(1.0, 1.0 / float(clean.norm() * lr))
    noise = (seen - clean * scale) * lr  # back in update units
    assert float(noise.std()) == pytest.approx(2.0, rel=0.15)  # 650 coordinates


def test_sample_level_view_differs_from_the_clean_gradient(victim):
    model, x, y = victim
    spec = DPSpec(level="sample", clip=1.0, noise_multiplier=1.0)
    seen = _flat(dp_upload(model, x, y, None, spec, 0.1, np.random.default_rng(0)))
    clean = _flat(victim_gradients(model, x, y))
    assert seen.shape == clean.shape and not torch.allclose(seen, clean, atol=1e-3)
