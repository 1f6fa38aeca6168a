"""Image-similarity scores of a reconstruction against the private original (both in [0, 1]).

SSIM uses an 11x11 Gaussian window (sigma 1.5) and data range 1, as Wang et al.
UQI (Wang & Bovik, 2002) is implemented here: sewar's ``uqi`` scores two
independent noise images near 0.7. MS-SSIM needs images of about 176 px and
more; for smaller images it is ``None`` and ``msssim_upscaled`` (bilinear to
176 px) is given, clearly labelled, only for comparison with FedML-HE.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.ndimage import gaussian_filter, uniform_filter

MSSSIM_MIN_SIDE = 176


def _gray(img: np.ndarray) -> np.ndarray:
    """(C, H, W) or (H, W) float image → (H, W) float64 (channels averaged for the windowed scores)."""
    arr = np.asarray(img, dtype=np.float64)
    return arr.mean(axis=0) if arr.ndim == 3 else arr


def mse(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.mean((np.asarray(a, np.float64) - np.asarray(b, np.float64)) ** 2))


def psnr(a: np.ndarray, b: np.ndarray, max_value: float = 1.0) -> float:
    err = mse(a, b)
    return math.inf if err == 0 else 10.0 * math.log10(max_value**2 / err)


def ssim(a: np.ndarray, b: np.ndarray, data_range: float = 1.0, sigma: float = 1.5) -> float:
    x, y = _gray(a), _gray(b)
    c1, c2 = (0.01 * data_range) ** 2, (0.03 * data_range) ** 2

    def blur(z: np.ndarray) -> np.ndarray:
        return gaussian_filter(z, sigma, truncate=3.5, mode="reflect")  # radius 5: an 11x11 window

    mx, my = blur(x), blur(y)
    vx, vy, cxy = blur(x * x) - mx * mx, blur(y * y) - my * my, blur(x * y) - mx * my
    num = (2 * mx * my + c1) * (2 * cxy + c2)
    den = (mx * mx + my * my + c1) * (vx + vy + c2)
    return float(np.mean(num / den))


def uqi(a: np.ndarray, b: np.ndarray, window: int = 8) -> float:
    """Universal quality index: mean over sliding windows of 4·σxy·μx·μy / ((σx²+σy²)(μx²+μy²)).

    Windows where the denominator vanishes score 1 if both are constant and equal, else 0.
    """
    x, y = _gray(a), _gray(b)
    mx, my = uniform_filter(x, window), uniform_filter(y, window)
    vx = uniform_filter(x * x, window) - mx * mx
    vy = uniform_filter(y * y, window) - my * my
    cxy = uniform_filter(x * y, window) - mx * my
    num = 4 * cxy * mx * my
    den = (vx + vy) * (mx * mx + my * my)
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.where(np.abs(den) > 1e-12, num / den, np.where(np.isclose(mx, my) & (vx + vy < 1e-12), 1.0, 0.0))
    half = window // 2  # drop the border where the window leaves the image
    inner = q[half : q.shape[0] - half + 1, half : q.shape[1] - half + 1] if min(q.shape) > window else q
    return float(np.mean(inner))


def vifp(a: np.ndarray, b: np.ndarray) -> float:
    """Pixel-domain VIF (Sheikh & Bovik, 2006; sewar's), scored on the 8-bit scale its visual-noise variance
    (sigma_n^2 = 2) is set for. On [0, 1] pixels that noise swamps the images' own variance, the score becomes a
    ratio of two near-zero sums, and a noise reconstruction of a low-contrast patch scored up to 7. VIF is not
    bounded by 1 even so: above 1, the reconstruction has more local contrast where it correlates."""
    from sewar.full_ref import vifp as sewar_vifp

    return float(sewar_vifp(255.0 * _gray(a), 255.0 * _gray(b)))


def _msssim(a: np.ndarray, b: np.ndarray) -> float:
    from sewar.full_ref import msssim

    return float(np.real(msssim(_gray(a), _gray(b), MAX=1.0)))


def msssim_upscaled(a: np.ndarray, b: np.ndarray) -> float:
    """MS-SSIM on images upscaled to 176 px (labelled: only for comparison with papers that report it)."""
    import torch
    import torch.nn.functional as F
    from sewar.full_ref import msssim

    def up(z: np.ndarray) -> np.ndarray:
        t = torch.as_tensor(_gray(z))[None, None]
        return F.interpolate(t, size=(MSSSIM_MIN_SIDE, MSSSIM_MIN_SIDE), mode="bilinear", align_corners=False)[
            0, 0
        ].numpy()

    return float(np.real(msssim(up(a), up(b), MAX=1.0)))


def score(original: np.ndarray, reconstruction: np.ndarray) -> dict[str, Any]:
    """Every score of one reconstruction; images are (C, H, W) in [0, 1]."""
    rec = np.clip(np.asarray(reconstruction, np.float64), 0.0, 1.0)
    side = min(np.asarray(original).shape[-2:])
    return {
        "mse": mse(original, rec),
        "psnr": psnr(original, rec),
        "ssim": ssim(original, rec),
        "uqi": uqi(original, rec),
        "vifp": vifp(original, rec),
        "msssim": None if side < MSSSIM_MIN_SIDE else _msssim(original, rec),
        "msssim_upscaled": msssim_upscaled(original, rec),
    }
