"""Selective-encryption masks over a language model's update (True: encrypted), as the selective protection makes them.

``sensitivity`` (FedML-HE; SHE-LoRA's choice for adapters): per coordinate, ``|dL/dw|`` averaged over the client's
first ``samples`` blocks, one block at a time, then the top ``ratio`` of the whole update
(:func:`hebench.protections.selective.masks.top_fraction`); ``magnitude``: ``|w|``; ``random``: seeded scores;
``layers``: whole tensors by name pattern (:func:`hebench.protections.selective.masks.layer_mask`).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from hebench.errors import ParameterError
from hebench.models.shared import shared_tensors
from hebench.protections.selective.masks import layer_mask, top_fraction

MASKS = ("sensitivity", "magnitude", "random", "layers")


def _scores_sensitivity(
    model: nn.Module, blocks: torch.Tensor, labels: torch.Tensor | None, samples: int
) -> np.ndarray:
    from hebench.inversion.text.views import text_loss

    params = [p for _, p in shared_tensors(model)]
    total = [torch.zeros_like(p) for p in params]
    count = min(samples, len(blocks))
    for i in range(count):
        label = None if labels is None else labels[i : i + 1]
        grads = torch.autograd.grad(text_loss(model, blocks[i : i + 1], label), params)
        for acc, g in zip(total, grads, strict=True):
            acc += g.detach().abs()
    return torch.cat([(t / count).reshape(-1) for t in total]).double().numpy()


def text_mask(
    model: nn.Module,
    kind: str,
    ratio: float,
    blocks: torch.Tensor | None = None,
    labels: torch.Tensor | None = None,
    samples: int = 16,
    seed: int = 0,
    layers: tuple[str, ...] = ("first", "last"),
) -> dict[str, torch.Tensor]:
    """Per update tensor, True where the coordinate is encrypted."""
    if kind == "sensitivity":
        if blocks is None:
            raise ParameterError("a sensitivity mask needs the client's blocks", "pass blocks")
        flat = top_fraction(_scores_sensitivity(model, blocks, labels, samples), ratio)
    elif kind == "magnitude":
        scores = torch.cat([p.detach().abs().reshape(-1) for _, p in shared_tensors(model)]).double().numpy()
        flat = top_fraction(scores, ratio)
    elif kind == "random":
        size = sum(p.numel() for _, p in shared_tensors(model))
        flat = top_fraction(np.random.default_rng(seed).random(size), ratio)
    elif kind == "layers":
        flat = layer_mask(model, layers)
    else:
        raise ParameterError(f"unknown mask '{kind}'", f"use one of {', '.join(MASKS)}")
    parts = torch.from_numpy(np.asarray(flat, dtype=bool)).split([p.numel() for _, p in shared_tensors(model)])
    return {name: part.reshape(p.shape) for (name, p), part in zip(shared_tensors(model), parts, strict=True)}
