"""Local training steps of a language model on token blocks: seeded batches, the trainable parameters only.

Used to pretrain the tiny base centrally and by tests; each step draws ``batch_size`` blocks (without
replacement within an epoch, seeded) and takes one optimiser step on their next-token loss. Frozen
parameters (a LoRA model's base) are never handed to the optimiser.
"""

from __future__ import annotations

import torch
from torch import nn

from hebench.errors import ParameterError
from hebench.models.language.next_token import block_loss

OPTIMISERS = ("sgd", "adamw")


def trainable(model: nn.Module) -> list[nn.Parameter]:
    return [p for p in model.parameters() if p.requires_grad]


def optimiser(model: nn.Module, name: str, lr: float) -> torch.optim.Optimizer:
    if name == "sgd":
        return torch.optim.SGD(trainable(model), lr=lr)
    if name == "adamw":
        return torch.optim.AdamW(trainable(model), lr=lr, weight_decay=0.01)
    raise ParameterError(f"unknown optimiser '{name}'", f"choose one of {', '.join(OPTIMISERS)}")


def batch_order(n: int, steps: int, batch_size: int, seed: int) -> list[torch.Tensor]:
    """``steps`` index batches over ``n`` blocks: seeded epochs of a permutation, cut into batches."""
    if n < 1 or batch_size < 1:
        raise ParameterError(f"cannot draw batches of {batch_size} from {n} blocks", "give at least one block")
    generator = torch.Generator().manual_seed(seed)
    order: list[torch.Tensor] = []
    while len(order) < steps:
        order.extend(torch.randperm(n, generator=generator).split(batch_size))
    return order[:steps]


def train_steps(
    model: nn.Module,
    blocks: torch.Tensor,
    *,
    steps: int,
    batch_size: int,
    lr: float,
    seed: int = 0,
    optimiser_name: str = "sgd",
    opt: torch.optim.Optimizer | None = None,
) -> list[float]:
    """Take ``steps`` optimiser steps on ``blocks``; the loss of each step's batch (before the step)."""
    opt = opt if opt is not None else optimiser(model, optimiser_name, lr)
    model.train()
    losses = []
    for idx in batch_order(len(blocks), steps, batch_size, seed):
        opt.zero_grad(set_to_none=True)
        loss = block_loss(model, blocks[idx])
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    return losses
