"""The reconstruction bound DP's noise implies (ReRo through f-DP): its known values, that no attack in a game
whose best attack is known beats it, and that an attack plan with DP carries it beside the measured success."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

from hebench.config import DPSpec
from hebench.inversion.scoring.dp_bound import baseline_kappa, gaussian_mu, gdp_epsilon, rero_bound, verdict


def test_the_bound_is_the_baseline_without_information_and_grows_with_mu():
    assert rero_bound(0.0, 0.05) == pytest.approx(0.05)
    assert rero_bound(1.0, 0.0) == 0.0 and rero_bound(math.inf, 0.05) == 1.0
    values = [rero_bound(mu, 0.01) for mu in (0.1, 0.5, 1.0, 2.0, 4.0)]
    assert values == sorted(values) and values[-1] > 0.9


def test_epsilon_of_a_gaussian_release_gives_back_its_delta_and_a_looser_bound():
    for mu in (0.3, 1.0, 3.0):
        eps = gdp_epsilon(mu, 1e-5)
        delta = norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * norm.cdf(-eps / mu - mu / 2)
        assert delta == pytest.approx(1e-5, rel=1e-4)
        for kappa in (0.01, 0.1):
            assert min(1.0, math.exp(eps) * kappa + 1e-5) >= rero_bound(mu, kappa)  # (ε, δ) alone says less


def test_mu_of_what_the_attacker_saw():
    assert gaussian_mu("client", 2.0, steps=5, clients=1) == pytest.approx(0.5)  # one upload, whatever the steps
    assert gaussian_mu("client", 2.0, steps=1, clients=4) == pytest.approx(0.25)  # the mean of four noised uploads
    assert gaussian_mu("sample", 2.0, steps=4, clients=1) == pytest.approx(1.0)  # four DP-SGD steps compose
    assert math.isinf(gaussian_mu("client", 0.0, 1, 1))


def test_the_best_attack_in_a_game_it_bounds_stays_under_it():
    """K candidates at distance `clip` from the origin, in orthogonal directions, one drawn uniformly
    (baseline 1/K), released with N(0, (z clip)^2) noise: the maximum-likelihood attack (the best one) guesses
    right less often than the bound."""
    rng = np.random.default_rng(0)
    k, z, trials = 10, 1.0, 20_000
    truth = rng.integers(0, k, trials)
    outputs = np.eye(k)[truth] + z * rng.standard_normal((trials, k))  # clip = 1
    success = float(np.mean(outputs.argmax(1) == truth))
    bound = rero_bound(gaussian_mu("client", z, 1, 1), 1 / k)
    assert 1 / k < success < bound  # the attack learns something, and no more than the bound allows


def test_kappa_is_the_best_blind_guess_over_public_images():
    flat = np.full((6, 1, 8, 8), 0.5) + np.random.default_rng(1).normal(0, 1e-3, (6, 1, 8, 8))
    upper, estimate, pairs = baseline_kappa(flat, 0.6)
    assert estimate == 1.0 and pairs == 5 and upper == 1.0  # any of these near-grey images guesses them all
    noise = np.random.default_rng(2).uniform(0, 1, (6, 1, 8, 8))
    upper, estimate, _ = baseline_kappa(noise, 0.6)
    assert estimate == 0.0 and 0 < upper < 0.6  # nothing guesses noise; the Wilson limit stays above 0


def test_a_measured_success_above_the_bound_is_called_a_bug():
    assert "bug" in verdict(0.05, 9, 10)
    assert "under the bound" in verdict(0.9, 0, 40)
    assert "consistent" in verdict(0.3, 2, 10)


def test_a_dp_plan_summary_carries_the_bound(tmp_path):
    from hebench.config import DataSpec
    from hebench.inversion.campaign import dp_bound_of
    from hebench.inversion.evaluate import AttackPlan

    plan = AttackPlan(data=DataSpec(dataset="natural", clients=1), dp=DPSpec(level="client", noise_multiplier=1.0))
    records = [{"ssim_per_image": [0.95]}, {"ssim_per_image": [0.1]}]
    bound = dp_bound_of(plan, records)
    assert bound["mu"] == pytest.approx(1.0) and 0 < bound["bound"] <= 1 and "1/2 recovered" in bound["verdict"]
