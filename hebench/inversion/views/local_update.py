"""What a client uploads after E local SGD steps, and the attacker's differentiable simulation of it.

The client's side runs hebench's own ``train_locally`` (plain SGD, no momentum)
on a copy of the model; the upload ``w_E - w_0`` is divided by ``-lr`` into a
pseudo-gradient, the sum of the E step gradients (for E = 1: the gradient).
The attacker knows E, the learning rate, the local batch size and the batch
order (Inverting Gradients' threat model, Geiping et al., 2020, Sec. 5) and
replays the same steps on its dummy data with ``torch.func``, keeping the
graph so that the distance to the observed update can be differentiated.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F
from torch import nn

from hebench.config import TrainingSpec
from hebench.fl.training import train_locally

if TYPE_CHECKING:
    from hebench.protections.dp.mechanism import SampleLevelDP


@dataclass(frozen=True)
class LocalTraining:
    """E local SGD steps of ``batch`` images (None: the whole local set) at learning rate ``lr``."""

    steps: int = 1
    lr: float = 0.1
    batch: int | None = None
    seed: int = 0

    def spec(self, n: int) -> TrainingSpec:
        return TrainingSpec(local_steps=self.steps, batch_size=self.batch or n, lr=self.lr, optimizer="sgd")


def local_batches(n: int, local: LocalTraining) -> list[torch.Tensor]:
    """The index batches ``train_locally`` draws for ``n`` samples (same generator, same order)."""
    spec = local.spec(n)
    gen = torch.Generator().manual_seed(local.seed)
    batches: list[torch.Tensor] = []
    while len(batches) < local.steps:
        batches += list(torch.randperm(n, generator=gen).split(spec.batch_size))
    return batches[: local.steps]


def client_update(
    model: nn.Module, x: torch.Tensor, y: torch.Tensor, local: LocalTraining, dp: SampleLevelDP | None = None
) -> tuple[torch.Tensor, ...]:
    """The client's real upload as a pseudo-gradient ``(w_0 - w_E) / lr``, one tensor per parameter (DP-SGD
    with ``dp``)."""
    twin = copy.deepcopy(model)
    before = [p.detach().clone() for p in twin.parameters()]
    train_locally(twin, x, y, local.spec(len(y)), local.seed, dp)
    return tuple((b - p.detach()) / local.lr for b, p in zip(before, twin.parameters(), strict=True))


def simulate_update(
    model: nn.Module, x: torch.Tensor, y: torch.Tensor, local: LocalTraining, create_graph: bool = True
) -> tuple[torch.Tensor, ...]:
    """The pseudo-gradient E SGD steps on ``(x, y)`` would upload, differentiable in ``x`` (and soft ``y``)."""
    from torch.func import functional_call

    names = [name for name, _ in model.named_parameters()]
    params = [p.detach() for p in model.parameters()]
    buffers = {k: v.detach() for k, v in model.named_buffers()}
    total: list[torch.Tensor] | None = None
    for idx in local_batches(len(x), local):
        current = [p if p.requires_grad else p.requires_grad_(True) for p in params]
        logits = functional_call(model, ({**dict(zip(names, current, strict=True)), **buffers}), (x[idx],))
        loss = _loss(logits, y[idx])
        grads = torch.autograd.grad(loss, current, create_graph=create_graph)
        total = list(grads) if total is None else [t + g for t, g in zip(total, grads, strict=True)]
        params = [p - local.lr * g for p, g in zip(current, grads, strict=True)]
    assert total is not None
    return tuple(total)


def _loss(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Cross-entropy with hard labels (the client's) or soft ones (DLG's optimised dummy label)."""
    if y.dtype == torch.long:
        return F.cross_entropy(logits, y)
    return torch.mean(torch.sum(-F.softmax(y, dim=-1) * F.log_softmax(logits, dim=-1), dim=-1))
