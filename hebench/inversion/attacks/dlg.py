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
from hebench.inversion.attacks.upload import dummy_upload
from hebench.inversion.views.observation import Observation


def serial(obs: Observation, cfg: AttackConfig, seed: int) -> Reconstruction:
    """One restart with ``torch.optim.LBFGS`` (the engine before issue #37)."""
    if obs.gradients is None:
        return prior(obs)
    dev = obs.gradients[0].device
    gen = torch.Generator().manual_seed(seed)
    x = start_images(obs, "randn", gen)
    y, source = start_labels(obs, cfg.known_label, gen)
    x, y = (
        x.to(dev).requires_grad_(True),
        (y.detach().to(dev).requires_grad_(True) if y.is_floating_point() else y.to(dev)),
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


@register("lbfgs")
def reconstruct(observations: Sequence[Observation], cfg: AttackConfig, seeds: Sequence[int]) -> list[Reconstruction]:
    """DLG, and iDLG when the recipe knows the label."""
    return one_by_one(serial, observations, cfg, seeds)
