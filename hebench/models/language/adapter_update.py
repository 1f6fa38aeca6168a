"""What a client sends and receives when fine-tuning a language model: its trainable parameters, by name.

With LoRA the trainable parameters are the adapters' ``lora_A`` / ``lora_B`` matrices (the frozen base
never travels); with full fine-tuning they are every parameter (tied embeddings once). The order is
``named_parameters`` order, as :func:`hebench.models.shared.shared_tensors` gives it, so flattening and
masks index the same coordinates on every party.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from hebench.errors import ParameterError
from hebench.models.shared import shared_tensors

Update = list[tuple[str, torch.Tensor]]


def adapter_update(model: nn.Module) -> Update:
    """The trainable parameters' names and values (detached copies), in update order."""
    return [(name, p.detach().clone()) for name, p in shared_tensors(model)]


def update_size(model: nn.Module) -> int:
    return sum(p.numel() for _, p in shared_tensors(model))


@torch.no_grad()
def load_adapter(model: nn.Module, update: Sequence[tuple[str, torch.Tensor]]) -> None:
    """Copy an (aggregated) update into ``model``'s trainable parameters; the frozen base is not touched.

    The names must be exactly the model's trainable parameters, in order, with the same shapes."""
    params = shared_tensors(model)
    expected, given = [n for n, _ in params], [n for n, _ in update]
    if expected != given:
        extra, lacking = sorted(set(given) - set(expected)), sorted(set(expected) - set(given))
        raise ParameterError(
            f"update names do not match this model's trainable parameters (unexpected: {extra[:3]}, missing:"
            f" {lacking[:3]}{', or another order' if not extra and not lacking else ''})",
            "aggregate updates of the same model with the same adapters (rank, targets) on every party",
        )
    for (name, p), (_, value) in zip(params, update, strict=True):
        if tuple(value.shape) != tuple(p.shape):
            raise ParameterError(f"{name}: update shape {tuple(value.shape)}, parameter {tuple(p.shape)}", "same rank")
        p.copy_(value.to(p.dtype))
