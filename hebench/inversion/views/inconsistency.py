"""Model inconsistency (Pasquini, Francati, Ateniese, "Eluding Secure Aggregation via Model Inconsistency",
CCS 2022): a malicious aggregator sends the victim the real model and every other client a *dead* one,
whose update is zero, so the secure "sum" is the victim's update alone.

The dead model is the real one with one weight changed: the bias of the last layer before the classifier
is set far below zero, so the units after it (ReLU or sigmoid) output exactly 0 with zero derivative. No
gradient reaches anything below, and the classifier's weights see zero inputs; only the classifier's bias
still moves (by the softmax error, independent of the image), so the attacker leaves it out of its match.
"""

from __future__ import annotations

import copy

import torch
from torch import nn

from hebench.errors import ParameterError

OFF = -1.0e4  # sigmoid(-1e4) and relu(-1e4 + ...) are exactly 0 in float32, and so are their derivatives


def classifier(model: nn.Module) -> nn.Linear:
    """The model's last linear layer (every model in the registry ends with one)."""
    linears = [m for m in model.modules() if isinstance(m, nn.Linear)]
    if not linears:
        raise ParameterError("model inconsistency needs a model that ends in a linear classifier", "use lenet or mlp")
    return linears[-1]


def dead_model(model: nn.Module, probe: torch.Tensor) -> nn.Module:
    """The model the non-victims get: the same, with the layer feeding the classifier switched off. Checked on
    ``probe`` (a batch of inputs): every gradient but the classifier's bias must be exactly zero."""
    dead = copy.deepcopy(model)
    head = classifier(dead)
    layers = [m for m in dead.modules() if getattr(m, "bias", None) is not None and m is not head]
    if not layers:
        raise ParameterError("model inconsistency: no layer with a bias before the classifier", "use lenet or mlp")
    with torch.no_grad():
        layers[-1].bias.fill_(OFF)
    grads = torch.autograd.grad(
        nn.functional.cross_entropy(dead(probe), torch.zeros(len(probe), dtype=torch.long)), list(dead.parameters())
    )
    live = [name for (name, p), g in zip(dead.named_parameters(), grads, strict=True) if p is not head.bias and g.any()]
    if live:
        raise ParameterError(
            f"model inconsistency: switching off {type(layers[-1]).__name__} leaves gradients in {', '.join(live)}",
            "use a model whose units the server can switch off with weights alone (lenet, mlp, cnn_dropout)",
        )
    return dead


def live_masks(model: nn.Module) -> tuple[torch.Tensor, ...]:
    """Per parameter, the coordinates the attacker matches: all but the classifier's bias (the dead models move it)."""
    head = classifier(model)
    return tuple(torch.full_like(p, p is not head.bias, dtype=torch.bool) for p in model.parameters())
