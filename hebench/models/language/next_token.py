"""Next-token loss and perplexity of a causal language model on token blocks.

The loss of a block of ``L`` tokens is the mean cross-entropy of predicting tokens 2..L from those
before them (``L - 1`` targets per block); perplexity is ``exp`` of the mean over every target of
every block. Computed from the model's logits here, the same way for a plain model and a ``peft`` one.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


def block_loss(model: nn.Module, blocks: torch.Tensor) -> torch.Tensor:
    """Mean next-token cross-entropy over ``blocks`` ``(n, L)`` (differentiable)."""
    logits = model(input_ids=blocks).logits
    return F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), blocks[:, 1:].reshape(-1))


@torch.no_grad()
def next_token_loss(model: nn.Module, blocks: torch.Tensor, batch_size: int = 32) -> float:
    """Mean next-token loss over every target of every block (evaluation mode; the model's mode restored)."""
    was_training = model.training
    model.eval()
    total, targets = 0.0, 0
    for batch in blocks.split(batch_size):
        n = batch.shape[0] * (batch.shape[1] - 1)
        total += float(block_loss(model, batch)) * n
        targets += n
    model.train(was_training)
    return total / targets


def perplexity(model: nn.Module, blocks: torch.Tensor, batch_size: int = 32) -> float:
    return math.exp(next_token_loss(model, blocks, batch_size))
