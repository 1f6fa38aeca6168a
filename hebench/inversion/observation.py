"""What the attacker (the aggregator) sees in each configuration.

Under DLG's threat model a client takes one local SGD step on a private batch,
so its update is -lr times the batch gradient: the aggregator sees that
gradient in raw mode, nothing usable under full HE, and the plaintext
coordinates only under selective encryption (with the mask known, as in
FedML-HE's setting).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn


@dataclass(frozen=True)
class Observation:
    model: nn.Module
    gradients: tuple[torch.Tensor, ...] | None  # None: everything encrypted
    masks: tuple[torch.Tensor, ...] | None  # visible coordinates per parameter; None: all visible
    input_shape: tuple[int, int, int]
    num_classes: int
    batch_size: int

    @property
    def visible_fraction(self) -> float:
        if self.gradients is None:
            return 0.0
        if self.masks is None:
            return 1.0
        total = sum(m.numel() for m in self.masks)
        return float(sum(m.sum() for m in self.masks)) / max(total, 1)


def victim_gradients(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, ...]:
    loss = F.cross_entropy(model(x), y)
    return tuple(g.detach() for g in torch.autograd.grad(loss, list(model.parameters())))


def parameter_masks(model: nn.Module, flat_mask: np.ndarray) -> tuple[torch.Tensor, ...]:
    """Split a mask over the flat update (state_dict order) into one mask per parameter."""
    params = dict(model.named_parameters())
    out, offset = {}, 0
    for name, tensor in model.state_dict().items():
        n = tensor.numel()
        if name in params:
            out[name] = torch.as_tensor(np.asarray(flat_mask[offset : offset + n], dtype=bool)).reshape(tensor.shape)
        offset += n
    return tuple(out[name] for name in params)


def observe(
    model: nn.Module, grads: tuple[torch.Tensor, ...], view: str, flat_mask: np.ndarray | None, shape, classes, batch
) -> Observation:
    """The aggregator's view: ``raw`` (all), ``he`` (nothing), ``selective`` (coordinates where the mask is False)."""
    if view == "raw":
        return Observation(model, grads, None, shape, classes, batch)
    if view == "he":
        return Observation(model, None, None, shape, classes, batch)
    assert flat_mask is not None
    if flat_mask.all():  # everything encrypted: nothing usable, as under full HE
        return Observation(model, None, None, shape, classes, batch)
    visible = parameter_masks(model, ~flat_mask)
    return Observation(model, tuple(g * m for g, m in zip(grads, visible, strict=True)), visible, shape, classes, batch)
