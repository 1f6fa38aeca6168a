"""Masks over the flat update (parameter order, :mod:`hebench.fl.update`): ``True`` means encrypted.

- ``sensitivity`` (FedML-HE): per-parameter |dL/dw| averaged over K local samples,
  computed per sample in one vectorised pass (torch.func.vmap over grad), never
  one autograd call per parameter. For one sample under one-hot cross-entropy
  it equals |gradient|.
- ``magnitude``: |w|.  ``random``: seeded uniform scores.
- ``layers``: whole tensors by name pattern; ``first`` and ``last`` name the first
  and last parameterised layers ("first and last layers", as FedML-HE recommends).

Top-p keeps the ceil(p·n) highest scores (ties broken by position).
"""

from __future__ import annotations

import fnmatch
import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from hebench.errors import ParameterError
from hebench.models.shared import shared_tensors


def _flat(model: nn.Module, per_param: dict[str, torch.Tensor]) -> np.ndarray:
    """Concatenate per-parameter maps in update order (buffers stay local: they are not in the update)."""
    parts = [per_param[name].detach().reshape(-1).float() for name, _ in shared_tensors(model)]
    return torch.cat(parts).numpy().astype(np.float64)


def sensitivity_map(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> np.ndarray:
    from torch.func import functional_call, grad, vmap

    params = {k: v.detach() for k, v in model.named_parameters()}
    buffers = {k: v.detach() for k, v in model.named_buffers()}
    was_training = model.training
    model.eval()

    def loss(p: dict[str, torch.Tensor], xi: torch.Tensor, yi: torch.Tensor) -> torch.Tensor:
        out = functional_call(model, (p, buffers), (xi.unsqueeze(0),))
        return F.cross_entropy(out, yi.unsqueeze(0))

    per_sample = vmap(grad(loss), in_dims=(None, 0, 0))(params, x, y)
    model.train(was_training)
    return _flat(model, {k: v.abs().mean(0) for k, v in per_sample.items()})


def magnitude_map(model: nn.Module) -> np.ndarray:
    return _flat(model, {k: v.detach().abs() for k, v in model.named_parameters()})


def random_map(model: nn.Module, seed: int) -> np.ndarray:
    n = sum(p.numel() for _, p in shared_tensors(model))
    return np.random.default_rng(seed).random(n)


def layer_mask(model: nn.Module, patterns: tuple[str, ...]) -> np.ndarray:
    names = [n for n, _ in model.named_parameters()]
    modules = list(dict.fromkeys(n.rsplit(".", 1)[0] for n in names))
    wanted: set[str] = set()
    for pattern in patterns:
        if pattern == "first":
            wanted |= {n for n in names if n.rsplit(".", 1)[0] == modules[0]}
        elif pattern == "last":
            wanted |= {n for n in names if n.rsplit(".", 1)[0] == modules[-1]}
        else:
            matched = {n for n in names if fnmatch.fnmatch(n, pattern) or fnmatch.fnmatch(n.rsplit(".", 1)[0], pattern)}
            if not matched:
                raise ParameterError(
                    f"layer pattern '{pattern}' matches no parameter", f"parameters: {', '.join(names)}"
                )
            wanted |= matched
    return np.concatenate([np.full(p.numel(), name in wanted) for name, p in shared_tensors(model)])


def top_fraction(scores: np.ndarray, ratio: float) -> np.ndarray:
    """Boolean mask of the ceil(ratio·n) highest scores."""
    if not 0.0 <= ratio <= 1.0:
        raise ParameterError(f"selective ratio {ratio} must be within [0, 1]", "use e.g. ratio: 0.1")
    k = math.ceil(ratio * len(scores))
    mask = np.zeros(len(scores), dtype=bool)
    if k:
        order = np.argsort(-scores, kind="stable")
        mask[order[:k]] = True
    return mask


def local_map(kind: str, model: nn.Module, x: torch.Tensor, y: torch.Tensor, seed: int) -> np.ndarray:
    """A client's local score map, scaled to [0, 1] so maps from clients sum on equal terms."""
    if kind == "sensitivity":
        scores = sensitivity_map(model, x, y)
    elif kind == "magnitude":
        scores = magnitude_map(model)
    elif kind == "random":
        scores = random_map(model, seed)
    else:
        raise ParameterError(f"mask '{kind}' has no score map", "use sensitivity, magnitude, random or layers")
    peak = float(scores.max()) if scores.size else 0.0
    return scores / peak if peak > 0 else scores
