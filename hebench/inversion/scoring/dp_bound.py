"""What DP's noise guarantees against reconstruction, to set beside what an attack measured.

Reconstruction robustness (ReRo; Balle, Cherubin and Hayes, S&P 2022): a mechanism is (κ, γ)-ReRo if, for a
prior over the target whose best guess *without* the output succeeds with probability at most κ, no attack
succeeds with probability above γ. Through the hypothesis-testing view of DP (Kaissis, Hayes, Ziller and
Rueckert 2023, "Bounding data reconstruction attacks with the hypothesis testing interpretation of differential
privacy"; the DP-SGD analysis is Hayes, Mahloujifar and Balle, NeurIPS 2023): an f-DP mechanism is
(κ, 1 − f(κ))-ReRo. For μ-GDP, f(α) = Φ(Φ⁻¹(1 − α) − μ), so

    γ = Φ(Φ⁻¹(κ) + μ);

for (ε, δ)-DP, 1 − f(κ) = min(1, e^ε κ + δ), always looser.

μ of what the attacker observed, with noise multiplier z (σ = z·clip, sensitivity clip):
- client level: one noised upload, μ = 1/z; the FedAvg mean of N clients' noised uploads: μ = 1/(z√N);
- sample level (DP-SGD): T noisy steps on the target's batch, μ = √T/(z√N). This counts every step as
  including the target (no amplification by subsampling: the attack's batches hold the target in every
  step), so it is a bound, not an approximation.

κ here is estimated from the public split: the best of the public images and the attack's own prior output
(mid-grey), used as a blind guess, scored at the success threshold against the other public images; its
Wilson upper limit is used, so the bound errs high. ``success`` is "SSIM ≥ threshold", the attacks' own.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy.optimize import brentq
from scipy.stats import norm

from hebench.analysis.success import wilson

PUBLIC_IMAGES = 48  # public images the baseline κ is estimated from (pairs grow with its square)


@dataclass(frozen=True)
class ReconstructionBound:
    """γ, the most any attack can succeed against what was observed, for a prior of baseline κ."""

    mu: float  # Gaussian DP parameter of the observed release
    kappa: float  # the baseline (Wilson upper limit of the estimate)
    kappa_estimate: float  # best blind guess's success rate on the public split
    kappa_pairs: int  # (guess, target) pairs behind it
    bound: float  # γ from μ-GDP
    epsilon: float | None  # ε of the observed release at ``delta`` (from μ)
    delta: float
    bound_from_epsilon: float | None  # γ from (ε, δ)-DP alone
    level: str  # client or sample
    releases: int  # noisy releases composed (sample level: steps)
    clients: int  # uploads averaged in what was observed
    note: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def gaussian_mu(level: str, noise_multiplier: float, steps: int, clients: int) -> float:
    """μ of the observed release (see the module's docstring)."""
    if noise_multiplier <= 0:
        return math.inf
    releases = steps if level == "sample" else 1
    return math.sqrt(releases) / (noise_multiplier * math.sqrt(max(clients, 1)))


def rero_bound(mu: float, kappa: float) -> float:
    """γ = Φ(Φ⁻¹(κ) + μ): no attack beats it against a μ-GDP release, for a prior of baseline κ."""
    if kappa <= 0:
        return 0.0
    if kappa >= 1 or math.isinf(mu):
        return 1.0
    return float(norm.cdf(norm.ppf(kappa) + mu))


def gdp_epsilon(mu: float, delta: float) -> float:
    """ε at ``delta`` of a μ-GDP mechanism (Dong, Roth and Su 2022, Corollary 2.13)."""
    if math.isinf(mu):
        return math.inf

    def gap(eps: float) -> float:
        tail = math.exp(min(eps + float(norm.logcdf(-eps / mu - mu / 2)), 700.0))  # e^ε Φ(·), in log space
        return float(norm.cdf(-eps / mu + mu / 2)) - tail - delta

    if gap(0.0) <= 0:
        return 0.0
    hi = 1.0
    while gap(hi) > 0:
        hi *= 2
    return float(brentq(gap, 0.0, hi))


def baseline_kappa(public: np.ndarray, threshold: float) -> tuple[float, float, int]:
    """(Wilson upper limit, estimate, pairs) of the best blind guess's success rate on ``public`` images."""
    from hebench.inversion.scoring.metrics import ssim

    images = public[:PUBLIC_IMAGES]
    grey = np.full_like(images[0], 0.5)
    guesses = [grey, *images]
    best, pairs = 0, len(images)
    for g, guess in enumerate(guesses):
        targets = [img for t, img in enumerate(images) if t != g - 1]  # a public image never guesses itself
        hits = sum(ssim(img, guess) >= threshold for img in targets)
        best = max(best, hits / max(len(targets), 1))
        pairs = len(targets)
    upper = wilson(round(best * pairs), pairs)[1]
    return upper, best, pairs


def bound_for(dp: Any, steps: int, clients: int, public: np.ndarray, threshold: float) -> ReconstructionBound:
    """The bound for an attack plan with DP spec ``dp``: ``steps`` noisy steps (sample level), ``clients`` averaged."""
    mu = gaussian_mu(dp.level, dp.noise_multiplier, steps, clients)
    kappa, estimate, pairs = baseline_kappa(public, threshold)
    eps = gdp_epsilon(mu, dp.delta)
    by_eps = None if math.isinf(eps) else min(1.0, math.exp(min(eps, 700)) * kappa + dp.delta)
    releases = steps if dp.level == "sample" else 1
    note = (
        f"no attack reconstructs the victim at SSIM >= {threshold:g} from this {dp.level}-level release with "
        f"probability above {rero_bound(mu, kappa):.3g}, for a prior whose best blind guess succeeds with "
        f"probability {kappa:.3g} (Wilson upper limit; {estimate:.3g} measured over {pairs} public images): "
        f"mu = {mu:.3g} (z = {dp.noise_multiplier:g}, {releases} release(s), mean of {clients})"
    )
    return ReconstructionBound(
        mu, kappa, estimate, pairs, rero_bound(mu, kappa), eps, dp.delta, by_eps, dp.level, releases, clients, note
    )


def verdict(bound: float, k: int, n: int) -> str:
    """The measured success beside the bound, on the evidence of a Wilson interval."""
    lo, hi = wilson(k, n)
    if lo > bound:
        return (
            f"measured {k}/{n} recovered (95% {lo:.2f}-{hi:.2f}) lies above the bound {bound:.3g}: the noise or its "
            "accounting is wrong (a bug to report)"
        )
    if hi <= bound:
        return f"measured {k}/{n} recovered (95% {lo:.2f}-{hi:.2f}) lies under the bound {bound:.3g}"
    return f"measured {k}/{n} recovered (95% {lo:.2f}-{hi:.2f}) is consistent with the bound {bound:.3g}"
