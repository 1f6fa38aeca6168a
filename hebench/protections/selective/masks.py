"""Masks over the flat update (parameter order, :mod:`hebench.fl.update`): ``True`` means encrypted.

- ``sensitivity`` (FedML-HE): per-parameter |dL/dw| averaged over K local samples, of the
  task's loss (:meth:`hebench.models.task.Task.sensitivity`): classification computes it per
  sample in one vectorised pass (torch.func.vmap over grad), never one autograd call per
  parameter (for one sample under one-hot cross-entropy it equals |gradient|); a language
  model block by block, over its trainable parameters only (a LoRA model's adapters, as
  SHE-LoRA's masks are over the adapters).
- ``magnitude``: |w|.  ``random``: seeded uniform scores.
- ``layers``: whole tensors by name pattern; ``first`` and ``last`` name the first
  and last parameterised layers ("first and last layers", as FedML-HE recommends).

Top-p keeps the ceil(p·n) highest scores (ties broken by position).
"""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Callable

import numpy as np
import torch
from torch import nn

from hebench.errors import ParameterError
from hebench.models.classification import CLASSIFICATION
from hebench.models.shared import shared_tensors

# (model, x, y) -> per trainable parameter, the mean over samples of |d loss / d w| (a task's ``sensitivity``)
Sensitivity = Callable[[nn.Module, torch.Tensor, torch.Tensor], dict[str, torch.Tensor]]


def _flat(model: nn.Module, per_param: dict[str, torch.Tensor]) -> np.ndarray:
    """Concatenate per-parameter maps in update order (buffers stay local: they are not in the update)."""
    parts = [per_param[name].detach().reshape(-1).float() for name, _ in shared_tensors(model)]
    return torch.cat(parts).numpy().astype(np.float64)


def sensitivity_map(
    model: nn.Module, x: torch.Tensor, y: torch.Tensor, sensitivity: Sensitivity = CLASSIFICATION.sensitivity
) -> np.ndarray:
    """FedML-HE's map over the update: the task's mean per-sample |gradient| (classification by default)."""
    return _flat(model, sensitivity(model, x, y))


def magnitude_map(model: nn.Module) -> np.ndarray:
    return _flat(model, {k: v.detach().abs() for k, v in shared_tensors(model)})


def random_map(model: nn.Module, seed: int) -> np.ndarray:
    n = sum(p.numel() for _, p in shared_tensors(model))
    return np.random.default_rng(seed).random(n)


def layer_mask(model: nn.Module, patterns: tuple[str, ...]) -> np.ndarray:
    """Whole tensors of the update by name; ``first`` / ``last``: the first and last layers with a shared tensor
    (a LoRA model's first and last adapters, not its frozen embeddings)."""
    names = [n for n, _ in shared_tensors(model)]
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


def local_map(
    kind: str,
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    seed: int,
    sensitivity: Sensitivity = CLASSIFICATION.sensitivity,
) -> np.ndarray:
    """A client's local score map, scaled to [0, 1] so maps from clients sum on equal terms."""
    if kind == "sensitivity":
        scores = sensitivity_map(model, x, y, sensitivity)
    elif kind == "magnitude":
        scores = magnitude_map(model)
    elif kind == "random":
        scores = random_map(model, seed)
    else:
        raise ParameterError(f"mask '{kind}' has no score map", "use sensitivity, magnitude, random or layers")
    peak = float(scores.max()) if scores.size else 0.0
    return scores / peak if peak > 0 else scores
