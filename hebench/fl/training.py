"""Local training, deterministic given a seed (evaluation is the task's: :mod:`hebench.models.task`)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F
from torch import nn

from hebench.config import TrainingSpec

if TYPE_CHECKING:
    from hebench.protections.dp.mechanism import SampleLevelDP

# torch's default generator (initialisation, dropout) is process-wide: clients hosted as threads of one
# process take turns with it, so each client's model is what it would be in a process of its own
GLOBAL_RNG = threading.RLock()

LossFn = Callable[[nn.Module, torch.Tensor, torch.Tensor], torch.Tensor]  # (model, x, y) -> a batch's mean loss


def cross_entropy(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Classification's loss (the default of :func:`train_locally`; a task passes its own)."""
    return F.cross_entropy(model(x), y)


def make_optimizer(model: nn.Module, spec: TrainingSpec) -> torch.optim.Optimizer:
    """The suite's optimiser over the trainable parameters (a LoRA model's frozen base is never handed to it)."""
    params = [p for p in model.parameters() if p.requires_grad]
    if spec.optimizer == "adam":
        return torch.optim.Adam(params, lr=spec.lr)
    if spec.optimizer == "adamw":
        return torch.optim.AdamW(params, lr=spec.lr, weight_decay=0.01)
    return torch.optim.SGD(params, lr=spec.lr, momentum=spec.momentum)


def batch_count(samples: int, spec: TrainingSpec) -> int:
    """Optimiser steps one round of local training takes on ``samples`` examples (as :func:`train_locally`)."""
    if spec.local_steps is not None:
        return spec.local_steps
    return spec.local_epochs * -(-samples // spec.batch_size)


def train_locally(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    spec: TrainingSpec,
    seed: int,
    dp: SampleLevelDP | None = None,
    loss: LossFn = cross_entropy,
) -> float:
    """Run local SGD/Adam (DP-SGD with ``dp``) on ``loss``; returns the mean training loss.

    ``seed`` orders the batches and seeds dropout; DP noise comes from ``dp``'s own source, never from it."""
    with GLOBAL_RNG:
        return _train(model, x, y, spec, seed, dp, loss)


def _train(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    spec: TrainingSpec,
    seed: int,
    dp: SampleLevelDP | None,
    loss: LossFn,
) -> float:
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)  # dropout
    model.train()
    opt = make_optimizer(model, spec)
    n = int(y.shape[0])
    batches: list[torch.Tensor] = []
    if spec.local_steps is not None:
        while len(batches) < spec.local_steps:
            perm = torch.randperm(n, generator=gen)
            batches += list(perm.split(spec.batch_size))
        batches = batches[: spec.local_steps]
    else:
        for _ in range(spec.local_epochs):
            batches += list(torch.randperm(n, generator=gen).split(spec.batch_size))
    if dp is None:
        return _steps(model, opt, x, y, batches, loss)
    with dp.wrap(model, opt) as dp_opt:
        mean = _steps(model, dp_opt, x, y, batches, loss)
    dp.account(len(batches))
    return mean


def _steps(
    model: nn.Module, opt: torch.optim.Optimizer, x: torch.Tensor, y: torch.Tensor, batches: list, loss_fn: LossFn
) -> float:
    total = 0.0
    for idx in batches:
        opt.zero_grad()
        loss = loss_fn(model, x[idx], y[idx])
        loss.backward()
        opt.step()
        total += loss.item()
    return total / max(len(batches), 1)
