"""What the aggregator receives from one client under ``dp:``: the same noise model the clients apply.

Client level: the client's upload (a gradient, or the update after E local steps) in update units
(pseudo-gradient × learning rate) is clipped to ``clip`` and gets N(0, (noise_multiplier·clip)²) per
coordinate, exactly as :func:`hebench.protections.dp.mechanism.privatize_update` does in a run. Sample level: the client
trains with DP-SGD (Opacus, per-sample clipping and noise per step) for its E steps (one step for the
one-gradient threat). The attacker matches its simulation against this noisy upload; it does not denoise.

The simulated noise is drawn from the campaign's seeded ``rng`` (a :class:`SeededNoise`), so a campaign
is reproducible; the attacker never uses its values (in a run the noise is secret to the client).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from hebench.inversion.views.local_update import LocalTraining, client_update
from hebench.protections.dp.mechanism import SampleLevelDP, privatize_update
from hebench.protections.dp.noise import SeededNoise
from hebench.protections.dp.spec import DPSpec


def dp_upload(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    local: LocalTraining | None,
    dp: DPSpec,
    lr: float,
    rng: np.random.Generator,
) -> tuple[torch.Tensor, ...]:
    """One client's noisy upload as a pseudo-gradient per parameter (``lr``: the one-gradient threat's step)."""
    steps = local if local is not None else LocalTraining(1, lr)
    if dp.level == "sample":
        return client_update(model, x, y, steps, SampleLevelDP(dp, len(y), steps.batch or len(y), SeededNoise(rng)))
    clean = client_update(model, x, y, steps)
    flat = torch.cat([g.reshape(-1) for g in clean]).numpy() * steps.lr
    noisy = torch.from_numpy(privatize_update(flat, dp, SeededNoise(rng)) / steps.lr)
    return tuple(part.reshape(g.shape) for part, g in zip(noisy.split([g.numel() for g in clean]), clean, strict=True))
