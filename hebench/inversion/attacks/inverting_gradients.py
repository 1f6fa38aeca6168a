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
from hebench.inversion.attacks.restarts import BatchObjective, RestartBatch, restart_batches
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
    dtype = obs.gradients[0].dtype
    x = start_images(obs, cfg.init, gen).to(dev, dtype).requires_grad_(True)
    y, source = start_labels(obs, True, gen)
    y = y.detach().to(dev, dtype).requires_grad_(True) if y.is_floating_point() else y.to(dev)
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


def batched(observations: Sequence[Observation], cfg: AttackConfig, seeds: Sequence[int]) -> list[Reconstruction]:
    """Every restart at once: one Adam over the stacked dummies. Adam's state is per coordinate, so each
    restart's moments, steps and signed updates are exactly those of its own Adam; the schedule is shared
    because every restart takes every step (a restart that leaves the finite numbers stops and is frozen)."""
    out: list[Reconstruction | None] = [None if o.gradients is not None else prior(o) for o in observations]
    for positions, batch in restart_batches(observations, seeds, cfg.init, True):
        for i, rec in zip(positions, _adam(batch, cfg), strict=True):
            out[i] = rec
    return [rec for rec in out if rec is not None]


def _adam(batch: RestartBatch, cfg: AttackConfig) -> list[Reconstruction]:
    size = batch.size
    x = batch.x0.clone().requires_grad_(True)
    y = batch.labels.clone().requires_grad_(True) if batch.soft else batch.labels
    params = [x, y] if batch.soft else [x]
    opt = torch.optim.Adam(params, lr=cfg.lr)
    sched = torch.optim.lr_scheduler.MultiStepLR(opt, milestones=step_decay(cfg.steps), gamma=0.1)
    objective = BatchObjective(batch, cfg.distance, cfg.tv)
    best_value, best_kept = [math.inf] * size, [math.inf] * size
    best_x, best_y = x.detach().clone(), y.detach().clone()
    traces: list[list[float]] = [[] for _ in range(size)]
    finite = [True] * size
    alive = list(range(size))
    for _ in range(cfg.steps):
        if not alive:
            break
        rows = torch.tensor(alive, device=x.device)
        loss, match, gx, gy = objective(x.detach()[rows], y.detach()[rows], rows)
        values = match.tolist()
        kept = values if cfg.keep == "match" else loss.tolist()
        improved, still = [], []
        for j, r in enumerate(alive):
            if not math.isfinite(kept[j]):
                finite[r] = False
                continue
            still.append(j)
            traces[r].append(values[j])
            if kept[j] < best_kept[r]:
                best_value[r], best_kept[r] = values[j], kept[j]
                improved.append(j)
        if improved:
            picked = rows[torch.tensor(improved, device=x.device)]
            best_x[picked] = x.detach()[picked]
            best_y[picked] = y.detach()[picked]
        keep = torch.tensor(still, dtype=torch.long, device=x.device)
        x.grad = torch.zeros_like(x)
        x.grad[rows[keep]] = gx[keep].sign()  # signed gradients, as in the paper
        if batch.soft:
            y.grad = torch.zeros_like(y)
            y.grad[rows[keep]] = gy[keep]  # type: ignore[index]
        opt.step()
        sched.step()
        with torch.no_grad():
            x.clamp_(0, 1)
        alive = [alive[j] for j in still]
    out = []
    for r in range(size):
        labels = (best_y[r].argmax(dim=-1) if batch.soft else best_y[r]).cpu()
        rec = Reconstruction(best_x[r].clamp(0, 1).cpu(), labels, best_value[r], finite[r], traces[r])
        rec.label_source, rec.batch = batch.sources[r], size
        out.append(rec)
    return out


@register("signed-adam")
def reconstruct(observations: Sequence[Observation], cfg: AttackConfig, seeds: Sequence[int]) -> list[Reconstruction]:
    """Inverting Gradients, one restart per ``(observation, seed)``."""
    if cfg.engine == "serial":
        return one_by_one(serial, observations, cfg, seeds)
    return batched(observations, cfg, seeds)
