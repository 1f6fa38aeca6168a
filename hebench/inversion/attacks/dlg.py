"""DLG (Zhu et al., 2019) and iDLG (Zhao et al., 2020): L-BFGS on dummy data (and a soft dummy label) to match
the observed upload by squared distance; iDLG reads the label from the last layer's gradient first.

Recipes: ``optimizer: lbfgs`` (``attacks/dlg.yaml``, ``attacks/idlg.yaml``). Each restart keeps its best iterate
by its own gradient loss, stops once that loss is below ``tolerance`` or has not improved for ``patience`` steps,
and stops (marked not finite) when its loss or dummy leaves the finite numbers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from hebench.inversion.attacks.config import AttackConfig
from hebench.inversion.attacks.dummies import start_images, start_labels
from hebench.inversion.attacks.matching import DISTANCES
from hebench.inversion.attacks.reconstruction import Reconstruction, prior
from hebench.inversion.attacks.registry import one_by_one, register
from hebench.inversion.attacks.restarts import BatchObjective, RestartBatch, restart_batches
from hebench.inversion.attacks.upload import dummy_upload
from hebench.inversion.optim.lbfgs import BatchedLBFGS
from hebench.inversion.views.observation import Observation


def serial(obs: Observation, cfg: AttackConfig, seed: int) -> Reconstruction:
    """One restart with ``torch.optim.LBFGS`` (the engine before issue #37)."""
    if obs.gradients is None:
        return prior(obs)
    dev = obs.gradients[0].device
    gen = torch.Generator().manual_seed(seed)
    dtype = obs.gradients[0].dtype
    x = start_images(obs, "randn", gen)
    y, source = start_labels(obs, cfg.known_label, gen)
    x, y = (
        x.to(dev, dtype).requires_grad_(True),
        (y.detach().to(dev, dtype).requires_grad_(True) if y.is_floating_point() else y.to(dev)),
    )
    variables = [x, y] if y.is_floating_point() else [x]
    search = None if cfg.line_search == "none" else "strong_wolfe"
    opt = torch.optim.LBFGS(variables, lr=cfg.lr, line_search_fn=search)
    distance = DISTANCES[cfg.distance]
    best = (math.inf, x.detach().clone(), y.detach().clone())
    trace: list[float] = []
    finite = True

    def closure() -> torch.Tensor:
        opt.zero_grad()
        loss = distance(dummy_upload(obs, x, y), obs.gradients, obs.masks)
        loss.backward()
        return loss

    since_best = 0
    for _ in range(cfg.steps):
        before = (x.detach().clone(), y.detach().clone())
        loss = float(opt.step(closure).detach())  # the objective at ``before``
        if not math.isfinite(loss) or not torch.isfinite(x).all():
            finite = False
            break
        trace.append(loss)
        if loss < best[0] * (1 - 1e-4):
            best, since_best = (loss, *before), 0
        else:
            since_best += 1
        if best[0] < cfg.tolerance or since_best >= cfg.patience:
            break
    images = best[1].clamp(0, 1).cpu()
    labels = (best[2] if best[2].dtype == torch.long else best[2].argmax(dim=-1)).cpu()
    return Reconstruction(images, labels, best[0], finite, trace, label_source=source)


def batched(observations: Sequence[Observation], cfg: AttackConfig, seeds: Sequence[int]) -> list[Reconstruction]:
    """Every restart at once: :class:`~hebench.inversion.optim.lbfgs.BatchedLBFGS` (torch's L-BFGS row by row)
    over the restarts' variables, each restart with its own best iterate, patience and tolerance."""
    out: list[Reconstruction | None] = [None if o.gradients is not None else prior(o) for o in observations]
    for positions, batch in restart_batches(observations, seeds, "randn", cfg.known_label):
        for i, rec in zip(positions, _lbfgs(batch, cfg), strict=True):
            out[i] = rec
    return [rec for rec in out if rec is not None]


def _lbfgs(batch: RestartBatch, cfg: AttackConfig) -> list[Reconstruction]:
    size, x_shape = batch.size, batch.x0.shape[1:]
    nx = batch.x0[0].numel()
    parts = [batch.x0.reshape(size, -1)] + ([batch.labels.reshape(size, -1)] if batch.soft else [])
    z = torch.cat(parts, dim=1).contiguous()
    objective = BatchObjective(batch, cfg.distance)

    def closure(rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        zr = z[rows]
        x = zr[:, :nx].reshape(len(rows), *x_shape)
        y = zr[:, nx:].reshape(len(rows), *batch.labels.shape[1:]) if batch.soft else batch.labels[rows]
        loss, _, gx, gy = objective(x, y, rows)
        flat = [gx.reshape(len(rows), -1)] + ([gy.reshape(len(rows), -1)] if gy is not None else [])
        return loss.detach(), torch.cat(flat, dim=1).detach()

    opt = BatchedLBFGS(z, lr=cfg.lr, line_search=cfg.line_search)
    best_loss, since = [math.inf] * size, [0] * size
    best_z = z.clone()
    traces: list[list[float]] = [[] for _ in range(size)]
    finite = [True] * size
    active = list(range(size))
    for _ in range(cfg.steps):
        if not active:
            break
        rows = torch.tensor(active, device=z.device)
        before = z[rows].clone()
        losses = opt.step(closure, rows).tolist()  # each restart's objective at ``before``
        x_ok = torch.isfinite(z[rows, :nx]).all(dim=1).tolist()
        improved, still = [], []
        for j, r in enumerate(active):
            if not math.isfinite(losses[j]) or not x_ok[j]:
                finite[r] = False
                continue
            traces[r].append(losses[j])
            if losses[j] < best_loss[r] * (1 - 1e-4):
                best_loss[r], since[r] = losses[j], 0
                improved.append(j)
            else:
                since[r] += 1
            if best_loss[r] >= cfg.tolerance and since[r] < cfg.patience:
                still.append(r)
        if improved:
            picked = torch.tensor(improved, device=z.device)
            best_z[rows[picked]] = before[picked]
        active = still
    out = []
    for r in range(size):
        images = best_z[r, :nx].reshape(x_shape).clamp(0, 1).cpu()
        if batch.soft:
            labels = best_z[r, nx:].reshape(batch.labels.shape[1:]).argmax(dim=-1).cpu()
        else:
            labels = batch.labels[r].cpu()
        out.append(Reconstruction(images, labels, best_loss[r], finite[r], traces[r], label_source=batch.sources[r]))
    for rec in out:
        rec.batch = size
    return out


@register("lbfgs")
def reconstruct(observations: Sequence[Observation], cfg: AttackConfig, seeds: Sequence[int]) -> list[Reconstruction]:
    """DLG, and iDLG when the recipe knows the label."""
    if cfg.engine == "serial":
        return one_by_one(serial, observations, cfg, seeds)
    return batched(observations, cfg, seeds)
