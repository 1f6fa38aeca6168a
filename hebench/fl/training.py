"""Local training and evaluation, deterministic given a seed."""

from __future__ import annotations

import threading
from dataclasses import dataclass
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


@dataclass(frozen=True)
class Evaluation:
    accuracy: float
    loss: float


def make_optimizer(model: nn.Module, spec: TrainingSpec) -> torch.optim.Optimizer:
    if spec.optimizer == "adam":
        return torch.optim.Adam(model.parameters(), lr=spec.lr)
    return torch.optim.SGD(model.parameters(), lr=spec.lr, momentum=spec.momentum)


def batch_count(samples: int, spec: TrainingSpec) -> int:
    """Optimiser steps one round of local training takes on ``samples`` examples (as :func:`train_locally`)."""
    if spec.local_steps is not None:
        return spec.local_steps
    return spec.local_epochs * -(-samples // spec.batch_size)


def train_locally(
    model: nn.Module, x: torch.Tensor, y: torch.Tensor, spec: TrainingSpec, seed: int, dp: SampleLevelDP | None = None
) -> float:
    """Run local SGD/Adam (DP-SGD with ``dp``); returns the mean training loss.

    ``seed`` orders the batches and seeds dropout; DP noise comes from ``dp``'s own source, never from it."""
    with GLOBAL_RNG:
        return _train(model, x, y, spec, seed, dp)


def _train(
    model: nn.Module, x: torch.Tensor, y: torch.Tensor, spec: TrainingSpec, seed: int, dp: SampleLevelDP | None
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
        return _steps(model, opt, x, y, batches)
    with dp.wrap(model, opt) as dp_opt:
        loss = _steps(model, dp_opt, x, y, batches)
    dp.account(len(batches))
    return loss


def _steps(model: nn.Module, opt: torch.optim.Optimizer, x: torch.Tensor, y: torch.Tensor, batches: list) -> float:
    total = 0.0
    for idx in batches:
        opt.zero_grad()
        loss = F.cross_entropy(model(x[idx]), y[idx])
        loss.backward()
        opt.step()
        total += loss.item()
    return total / max(len(batches), 1)


@torch.no_grad()
def evaluate(model: nn.Module, x: torch.Tensor, y: torch.Tensor, batch: int = 512) -> Evaluation:
    model.eval()
    correct, loss = 0, 0.0
    for i in range(0, len(y), batch):
        out = model(x[i : i + batch])
        loss += float(F.cross_entropy(out, y[i : i + batch], reduction="sum"))
        correct += int((out.argmax(1) == y[i : i + batch]).sum())
    return Evaluation(correct / max(len(y), 1), loss / max(len(y), 1))
