"""dp: client-level clipping and noise at the stated scale; sample-level DP-SGD's ε, decreasing in the noise."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from hebench.errors import SuiteError
from hebench.fl.dp import SampleLevelDP, clip_update, noise_rng, privatize_update
from hebench.fl.training import train_locally
from hebench.suite import DPSpec, TrainingSpec, parse_suite


def test_clipping_bounds_the_norm_and_leaves_a_small_update_alone():
    big = np.random.default_rng(0).normal(size=10_000).astype(np.float32) * 5
    assert np.linalg.norm(clip_update(big, 1.0)) == pytest.approx(1.0, rel=1e-5)
    small = big / np.linalg.norm(big) * 0.5
    np.testing.assert_array_equal(clip_update(small, 1.0), small)


@pytest.mark.parametrize("z, clip", [(0.5, 1.0), (2.0, 0.1)])
def test_noise_scale_matches_the_stated_sigma(z, clip):
    spec = DPSpec(level="client", clip=clip, noise_multiplier=z)
    update = np.zeros(200_000, np.float32)  # no signal: what comes out is the noise
    noisy = privatize_update(update, spec, noise_rng(7, 3, 1))
    sigma = z * clip
    assert noisy.std() == pytest.approx(sigma, rel=0.02)  # 200k draws: the sample std is within ~0.3 %
    assert abs(noisy.mean()) < 5 * sigma / np.sqrt(noisy.size)


def test_noise_is_seeded_per_client_and_round():
    spec = DPSpec(level="client", clip=1.0, noise_multiplier=1.0)
    zero = np.zeros(100, np.float32)
    again = privatize_update(zero, spec, noise_rng(0, 1, 2))
    np.testing.assert_array_equal(privatize_update(zero, spec, noise_rng(0, 1, 2)), again)
    assert not np.array_equal(privatize_update(zero, spec, noise_rng(0, 1, 3)), again)
    assert not np.array_equal(privatize_update(zero, spec, noise_rng(0, 2, 2)), again)


def _epsilon(z: float, rounds: int = 2) -> float:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(16, 4))
    x, y = torch.randn(64, 1, 4, 4), torch.randint(0, 4, (64,))
    dp = SampleLevelDP(DPSpec(level="sample", clip=1.0, noise_multiplier=z), samples=64, batch_size=16)
    for r in range(rounds):
        train_locally(model, x, y, TrainingSpec(batch_size=16, lr=0.1), seed=r, dp=dp)
    epsilon = dp.epsilon()
    assert epsilon is not None
    return epsilon


def test_sample_level_epsilon_grows_with_rounds_and_falls_with_noise():
    assert _epsilon(1.0, rounds=2) > _epsilon(1.0, rounds=1)
    assert _epsilon(0.8) > _epsilon(1.5) > _epsilon(3.0) > 0


def test_sample_level_dp_changes_training_and_clips_per_sample():
    torch.manual_seed(0)
    base = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(16, 4))
    x, y = torch.randn(32, 1, 4, 4) * 100, torch.randint(0, 4, (32,))  # huge inputs: huge per-sample gradients
    plain, private = (torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(16, 4)) for _ in range(2))
    plain.load_state_dict(base.state_dict())
    private.load_state_dict(base.state_dict())
    spec = TrainingSpec(batch_size=32, lr=1.0, local_steps=1)
    train_locally(plain, x, y, spec, seed=0)
    dp = SampleLevelDP(DPSpec(level="sample", clip=0.5, noise_multiplier=0.0), samples=32, batch_size=32)
    train_locally(private, x, y, spec, seed=0, dp=dp)
    step = torch.cat(
        [(a - b).detach().reshape(-1) for a, b in zip(base.parameters(), private.parameters(), strict=True)]
    )
    free = torch.cat([(a - b).detach().reshape(-1) for a, b in zip(base.parameters(), plain.parameters(), strict=True)])
    assert float(step.norm()) <= 0.5 * 1.0 + 1e-5  # lr × mean of per-sample gradients clipped to 0.5
    assert float(free.norm()) > 10 * float(step.norm())
    assert dp.epsilon() is None  # no noise: no finite guarantee, none recorded


def test_dp_schema_errors_name_the_field():
    with pytest.raises(SuiteError, match=r"configurations\.0\.dp\.noise_multiplier"):
        parse_suite({"name": "x", "configurations": [{"mode": "raw", "dp": {"level": "client"}}]})
    with pytest.raises(SuiteError, match=r"configurations\.0\.dp\.level"):
        parse_suite({"name": "x", "configurations": [{"mode": "raw", "dp": {"level": "row", "noise_multiplier": 1}}]})


def test_labels_name_dp_tls_and_the_modelled_tee():
    confs = [
        {"mode": "raw"},
        {"mode": "raw", "dp": {"level": "client", "clip": 1.0, "noise_multiplier": 0.5}},
        {"mode": "raw", "dp": {"level": "sample", "noise_multiplier": 1.0, "delta": "1e-5"}},
        {"mode": "raw", "transport": "tls"},
        {"mode": "raw", "tee": {"coefficients": "c.yaml", "mechanisms": ["tdx"]}},
    ]
    labels = [c.label for c in parse_suite({"name": "x", "configurations": confs}).configurations]
    assert labels == ["raw", "raw/dp-client-z0.5-c1", "raw/dp-sample-z1-c1", "raw/tls", "raw/tee-modelled"]
