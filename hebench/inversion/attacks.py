"""The attacks behind one signature: ``reconstruct(observation, seed) -> Reconstruction``.

- ``dlg`` (Zhu et al., 2019): L-BFGS (lr 1) on dummy data and a soft dummy label,
  squared gradient distance.
- ``idlg`` (Zhao et al., 2020): the label from the last layer's gradient, then DLG on the data.
- ``inverting-gradients`` (Geiping et al., 2020): cosine distance + total variation,
  Adam on signed gradients, boxed to the image range, step decay.

Every attack checks finiteness at each step and keeps its best iterate by its
own gradient loss: it never looks at the private image.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from hebench.inversion.labels import infer_label
from hebench.inversion.matching import DISTANCES, total_variation
from hebench.inversion.observation import Observation


@dataclass(frozen=True)
class AttackConfig:
    """An attack recipe (``attacks/<name>.yaml``)."""

    name: str = "dlg"
    optimizer: str = "lbfgs"  # lbfgs (DLG, iDLG) or signed-adam (Inverting Gradients)
    steps: int = 300
    lr: float = 1.0
    distance: str = "l2"  # l2 (DLG) or cosine (Inverting Gradients; the masked-cosine variant under selective)
    tv: float = 1e-4  # total-variation weight (inverting-gradients)
    known_label: bool = False  # infer the label (idlg / inverting-gradients)
    patience: int = 40  # stop a restart whose best loss has not improved for this many steps
    tolerance: float = 1e-10  # stop once the gradient loss is this small


@dataclass
class Reconstruction:
    images: torch.Tensor  # (B, C, H, W) in [0, 1]
    labels: torch.Tensor  # (B,)
    grad_loss: float  # the attacker's own objective at the kept iterate
    finite: bool = True
    trace: list[float] = field(default_factory=list)
    prior_only: bool = False


def prior(obs: Observation) -> Reconstruction:
    """What an attacker outputs with nothing to match: the middle of the box, class 0 (the floor)."""
    shape = (obs.batch_size, *obs.input_shape)
    return Reconstruction(
        torch.full(shape, 0.5), torch.zeros(obs.batch_size, dtype=torch.long), math.nan, True, [], True
    )


def _soft_cross_entropy(logits: torch.Tensor, target_logits: torch.Tensor) -> torch.Tensor:
    return torch.mean(torch.sum(-F.softmax(target_logits, dim=-1) * F.log_softmax(logits, dim=-1), dim=-1))


def _dummy_gradients(obs: Observation, x: torch.Tensor, label: torch.Tensor) -> tuple[torch.Tensor, ...]:
    logits = obs.model(x)
    loss = F.cross_entropy(logits, label) if label.dtype == torch.long else _soft_cross_entropy(logits, label)
    return torch.autograd.grad(loss, list(obs.model.parameters()), create_graph=True)


def lbfgs_attack(obs: Observation, cfg: AttackConfig, seed: int) -> Reconstruction:
    """DLG, and iDLG when the label is inferred."""
    if obs.gradients is None:
        return prior(obs)
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn((obs.batch_size, *obs.input_shape), generator=gen).requires_grad_(True)
    label = infer_label(obs) if cfg.known_label else None
    if label is not None:
        y = torch.tensor([label])
        variables = [x]
    else:
        y = torch.randn((obs.batch_size, obs.num_classes), generator=gen).requires_grad_(True)
        variables = [x, y]
    opt = torch.optim.LBFGS(variables, lr=cfg.lr)
    distance = DISTANCES[cfg.distance]
    best = (math.inf, x.detach().clone(), y.detach().clone())
    trace: list[float] = []
    finite = True

    def closure() -> torch.Tensor:
        opt.zero_grad()
        loss = distance(_dummy_gradients(obs, x, y), obs.gradients, obs.masks)
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
    images = best[1].clamp(0, 1)
    labels = best[2] if best[2].dtype == torch.long else best[2].argmax(dim=-1)
    return Reconstruction(images, labels, best[0], finite, trace)


def inverting_gradients(obs: Observation, cfg: AttackConfig, seed: int) -> Reconstruction:
    if obs.gradients is None:
        return prior(obs)
    gen = torch.Generator().manual_seed(seed)
    x = torch.rand((obs.batch_size, *obs.input_shape), generator=gen).requires_grad_(True)
    label = infer_label(obs)
    if label is None:  # no visible last layer: fall back to optimising a soft label as DLG does
        y = torch.randn((obs.batch_size, obs.num_classes), generator=gen).requires_grad_(True)
        params = [x, y]
    else:
        y = torch.tensor([label] * obs.batch_size)
        params = [x]
    opt = torch.optim.Adam(params, lr=cfg.lr)
    milestones = [int(cfg.steps * f) for f in (3 / 8, 5 / 8, 7 / 8)]
    sched = torch.optim.lr_scheduler.MultiStepLR(opt, milestones=milestones, gamma=0.1)
    best = (math.inf, x.detach().clone(), y.detach().clone())
    trace: list[float] = []
    finite = True
    for _ in range(cfg.steps):
        opt.zero_grad()
        match = DISTANCES[cfg.distance](_dummy_gradients(obs, x, y), obs.gradients, obs.masks)
        loss = match + cfg.tv * total_variation(x)
        loss.backward()
        value = float(match)
        if not math.isfinite(value):
            finite = False
            break
        trace.append(value)
        if value < best[0]:
            best = (value, x.detach().clone(), y.detach().clone())
        x.grad.sign_()  # signed gradients, as in the paper
        opt.step()
        sched.step()
        with torch.no_grad():
            x.clamp_(0, 1)
    labels = best[2] if best[2].dtype == torch.long else best[2].argmax(dim=-1)
    return Reconstruction(best[1].clamp(0, 1), labels, best[0], finite, trace)


OPTIMIZERS = {"lbfgs": lbfgs_attack, "signed-adam": inverting_gradients}


def reconstruct(obs: Observation, cfg: AttackConfig, seed: int) -> Reconstruction:
    return OPTIMIZERS[cfg.optimizer](obs, cfg, seed)
