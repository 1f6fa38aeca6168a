"""Mask agreement as in FedML-HE: local score maps are summed under encryption, every
client decrypts the same sum and derives the same top-p mask."""

from __future__ import annotations

import numpy as np
import torch

from hebench.protections.selective.masks import layer_mask, local_map, top_fraction
from hebench.protections.selective.spec import SelectiveSpec


def client_map(spec: SelectiveSpec, model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor, seed: int) -> np.ndarray:
    return local_map(spec.mask, model, x[: spec.samples], y[: spec.samples], seed).astype(np.float32)


def mask_from(spec: SelectiveSpec, model: torch.nn.Module, summed: np.ndarray | None) -> np.ndarray:
    """The agreed mask (``True``: encrypted)."""
    if spec.mask == "layers":
        return layer_mask(model, spec.layers)
    assert summed is not None
    return top_fraction(np.asarray(summed, dtype=np.float64), spec.ratio)
