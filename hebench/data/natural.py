"""``natural``: 32x32 RGB patches of the two photographs scikit-learn ships (offline, CC BY 2.0).

``sklearn.datasets.load_sample_images`` holds ``china.jpg`` and ``flower.jpg``
(427x640 RGB). Each is downscaled by ``scale`` (area averaging), cut into
non-overlapping 32x32 patches, and near-flat patches (pixel std below
``min_std``) are dropped: a flat patch is trivially "recovered" by any smooth
output and would flatter an attack. Patches are natural-image content at
CIFAR's size, for gradient-inversion attacks; they have no classes. Labels are
synthetic (seeded, uniform over ``classes``, 100 as CIFAR-100) so that a
classifier's gradient exists; accuracy on this set means nothing.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

PATCH = 32
CLASSES = 100
SOURCES = ("china.jpg", "flower.jpg")


def load_natural_tensors(
    scale: int = 2, min_std: float = 0.05, classes: int = CLASSES, seed: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """(patches (n, 3, 32, 32) in [0, 1], synthetic labels (n,)); patch order: image, row, column."""
    from sklearn.datasets import load_sample_images

    bunch = load_sample_images()
    patches = []
    for img in bunch.images:
        t = torch.tensor(np.asarray(img), dtype=torch.float32).permute(2, 0, 1).unsqueeze(0) / 255.0
        if scale > 1:
            t = F.avg_pool2d(t, scale)
        _, _, h, w = t.shape
        for r in range(h // PATCH):
            for c in range(w // PATCH):
                patch = t[0, :, r * PATCH : (r + 1) * PATCH, c * PATCH : (c + 1) * PATCH]
                if float(patch.std()) >= min_std:
                    patches.append(patch)
    x = torch.stack(patches).clamp_(0.0, 1.0)
    y = torch.as_tensor(np.random.default_rng(seed).integers(0, classes, len(patches)), dtype=torch.int64)
    return x, y
