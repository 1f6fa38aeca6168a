"""Each score on cases with known answers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hebench.inversion.scoring.metrics import psnr, score, ssim, uqi

rng = np.random.default_rng(0)
IMG = rng.random((1, 28, 28))


def test_identical_images_score_perfectly():
    s = score(IMG, IMG)
    assert s["mse"] == 0 and math.isinf(s["psnr"]) and s["ssim"] == pytest.approx(1.0)
    assert s["uqi"] == pytest.approx(1.0) and s["vifp"] == pytest.approx(1.0, abs=1e-6)
    assert s["msssim"] is None  # undefined below 176 px; the upscaled variant is labelled
    assert s["msssim_upscaled"] == pytest.approx(1.0)


def test_independent_noise_scores_near_zero():
    noise = rng.random((1, 28, 28))
    s = score(IMG, noise)
    assert abs(s["ssim"]) < 0.1 and abs(s["uqi"]) < 0.1 and s["vifp"] < 0.2


def test_inverted_image_is_anticorrelated():
    s = score(IMG, 1 - IMG)
    assert s["ssim"] < -0.3 and s["uqi"] < -0.5


def test_uqi_known_value_for_a_scaled_image():
    # y = 2x: sigma_xy = 2 var, var_y = 4 var, mu_y = 2 mu  =>  Q = 16/25 in every window
    x = rng.random((28, 28)) + 0.5
    assert uqi(x, 2 * x) == pytest.approx(16 / 25, abs=1e-9)


def test_sewar_uqi_pitfall_is_not_ours():
    from sewar.full_ref import uqi as sewar_uqi

    a, b = rng.random((28, 28)), rng.random((28, 28))
    assert sewar_uqi(a, b) > 0.5 > abs(uqi(a, b))


def test_psnr_and_ssim_known_values():
    assert psnr(np.zeros((4, 4)), np.full((4, 4), 0.1)) == pytest.approx(20.0)
    assert ssim(IMG, np.clip(IMG + 0.0, 0, 1)) == pytest.approx(1.0)


def test_vifp_of_a_noise_reconstruction_stays_low_on_natural_patches():
    # #40: failed secagg reconstructions (SSIM 0.03-0.07) scored VIFp 2-3: sewar's noise variance is set for 8-bit
    # pixels, and on [0, 1] pixels a noise image beat the original's own low contrast (up to 6.9 here)
    from hebench.data.natural import load_natural_tensors
    from hebench.inversion.scoring.metrics import vifp

    patches = load_natural_tensors()[0].numpy()[::7]
    noise = np.random.default_rng(0).normal(0.5, 0.5, (len(patches), 3, 32, 32)).clip(0, 1)
    scores = [vifp(x, n) for x, n in zip(patches, noise, strict=True)]
    assert max(scores) < 0.5, scores
    assert vifp(patches[0], patches[0]) == pytest.approx(1.0, abs=1e-6)
