"""Inverting Gradients (Geiping et al., 2020), at the reference implementation's settings (breaching): cosine
distance + total variation, Adam on signed gradients, boxed to [0, 1], step decay; the best iterate kept by
``cfg.keep`` (the whole objective, or the match alone). The label is always taken where it can be had (inferred
for one image, given for more), else optimised as a soft dummy.

Recipe: ``optimizer: signed-adam`` (``attacks/inverting-gradients.yaml``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from hebench.inversion.attacks.config import AttackConfig
from hebench.inversion.attacks.dummies import start_images, start_labels
from hebench.inversion.attacks.matching import DISTANCES, total_variation
from hebench.inversion.attacks.reconstruction import Reconstruction, prior
from hebench.inversion.attacks.registry import one_by_one, register
from hebench.inversion.attacks.upload import dummy_upload
from hebench.inversion.views.observation import Observation


def step_decay(steps: int) -> list[int]:
    """breaching's ``step-lr`` schedule: the step size drops x0.1 at about 3/8, 5/8 and 7/8 of the steps."""
    return [int(steps // 2.667), int(steps // 1.6), int(steps // 1.142)]


def serial(obs: Observation, cfg: AttackConfig, seed: int) -> Reconstruction:
    """One restart with ``torch.optim.Adam`` (the engine before issue #37)."""
    if obs.gradients is None:
        return prior(obs)
    dev = obs.gradients[0].device
    gen = torch.Generator().manual_seed(seed)
    x = start_images(obs, cfg.init, gen).to(dev).requires_grad_(True)
    y, source = start_labels(obs, True, gen)
    y = y.detach().to(dev).requires_grad_(True) if y.is_floating_point() else y.to(dev)
    params = [x, y] if y.is_floating_point() else [x]
    opt = torch.optim.Adam(params, lr=cfg.lr)
    sched = torch.optim.lr_scheduler.MultiStepLR(opt, milestones=step_decay(cfg.steps), gamma=0.1)
    best = (math.inf, x.detach().clone(), y.detach().clone())
    best_kept = math.inf
    trace: list[float] = []
    finite = True
    for _ in range(cfg.steps):
        opt.zero_grad()
        match = DISTANCES[cfg.distance](dummy_upload(obs, x, y), obs.gradients, obs.masks)
        loss = match + cfg.tv * total_variation(x)
        loss.backward()
        value = float(match.detach())
        kept = value if cfg.keep == "match" else float(loss.detach())
        if not math.isfinite(kept):
            finite = False
            break
        trace.append(value)
        if kept < best_kept:
            best, best_kept = (value, x.detach().clone(), y.detach().clone()), kept
        x.grad.sign_()  # signed gradients, as in the paper
        opt.step()
        sched.step()
        with torch.no_grad():
            x.clamp_(0, 1)
    labels = (best[2] if best[2].dtype == torch.long else best[2].argmax(dim=-1)).cpu()
    return Reconstruction(best[1].clamp(0, 1).cpu(), labels, best[0], finite, trace, label_source=source)


@register("signed-adam")
def reconstruct(observations: Sequence[Observation], cfg: AttackConfig, seeds: Sequence[int]) -> list[Reconstruction]:
    """Inverting Gradients, one restart per ``(observation, seed)``."""
    return one_by_one(serial, observations, cfg, seeds)
