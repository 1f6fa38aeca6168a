"""Whose data a selective mask is computed from (the attacked sample, the client's data, or all clients').

- ``sample``: the sensitivity of the attacked batch itself (the most protective
  case for that batch, and what a one-gradient analysis implicitly assumes).
- ``local``: the victim client's local map, |dL/dw| averaged over its first K
  local samples (FedML-HE's per-client sensitivity).
- ``global``: the map the clients agree on in hebench runs (FedML-HE's
  protocol): every client's local map scaled to [0, 1], summed, top p.

``random`` and ``magnitude`` masks do not depend on data; ``layers`` masks by name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import numpy as np
import torch

from hebench.data.federated import ClientData
from hebench.errors import ParameterError
from hebench.protections.selective.masks import layer_mask, local_map, top_fraction
from hebench.protections.selective.spec import SelectiveSpec

MaskSource = Literal["sample", "local", "global"]
MASK_SOURCES: tuple[str, ...] = ("sample", "local", "global")
# (kind, model, x, y, seed) -> a client's score map, as :func:`~hebench.protections.selective.masks.local_map`
ScoreMap = Callable[[str, torch.nn.Module, torch.Tensor, torch.Tensor, int], np.ndarray]


def selective_mask(
    spec: SelectiveSpec,
    model: torch.nn.Module,
    source: str,
    batch: tuple[torch.Tensor, torch.Tensor],
    clients: tuple[ClientData, ...],
    seed: int,
    score: ScoreMap = local_map,
) -> np.ndarray:
    """The flat mask (``True``: encrypted) for the victim ``clients[0]`` attacked on ``batch``; ``score`` makes
    each client's score map (a campaign passes one that remembers the maps its plans share)."""
    if spec.mask == "layers":
        return layer_mask(model, spec.layers)
    if source == "sample":
        scores = score(spec.mask, model, batch[0], batch[1], seed)
    elif source == "local":
        victim = clients[0]
        scores = score(spec.mask, model, victim.x[: spec.samples], victim.y[: spec.samples], seed)
    elif source == "global":
        scores = sum(  # type: ignore[assignment]
            score(spec.mask, model, c.x[: spec.samples], c.y[: spec.samples], seed) for c in clients
        )
    else:
        raise ParameterError(f"mask source {source!r} is unknown", f"use one of {', '.join(MASK_SOURCES)}")
    return top_fraction(np.asarray(scores, dtype=np.float64), spec.ratio)
