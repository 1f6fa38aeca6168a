"""``digits``: scikit-learn's bundled handwritten digits (1,797 real 8x8 images), offline.

Images are upsampled to 28x28 (bilinear) so the same models apply as for
(F)EMNIST, and scaled to [0, 1].
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def load_digits_tensors(size: int = 28) -> tuple[torch.Tensor, torch.Tensor]:
    from sklearn.datasets import load_digits

    bunch = load_digits()
    x = torch.tensor(bunch.images, dtype=torch.float32).unsqueeze(1) / 16.0
    x = F.interpolate(x, size=(size, size), mode="bilinear", align_corners=False).clamp_(0.0, 1.0)
    return x, torch.tensor(bunch.target, dtype=torch.int64)
