"""Selective-encryption masks over a language model's update (True: encrypted), made by the selective protection's
own code (:mod:`hebench.protections.selective.agreement`) from the data a mask source names.

A run agrees its mask before round 0 (FedML-HE): every client computes its score map over its first ``samples``
blocks (:func:`~hebench.protections.selective.agreement.client_map`: the task's sensitivity, ``|dL/dw|`` per block
over the trainable parameters, scaled to [0, 1]), the aggregator sums the maps under encryption, and every client
takes the top ``ratio`` of the sum (:func:`~hebench.protections.selective.agreement.mask_from`). The sources
(:data:`hebench.protections.selective.mask_source.MASK_SOURCES`, as the image attacks name them):

- ``global``: that agreement over every client of the suite, as the run makes it (the sum in the clear here: the
  run's CKKS sum carries approximation noise of ~1e-6 of a map, which can reorder exact near-ties at the cut);
- ``local``: the victim's own map alone (its first ``samples`` blocks; FedML-HE's per-client sensitivity);
- ``sample``: the map of the attacked batch itself (its first ``samples`` blocks): the most protective mask for
  that batch, what a one-gradient analysis assumes.

``magnitude`` and ``random`` maps do not depend on data (every client's is the same: the source changes nothing);
``layers`` masks whole tensors by name.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from hebench.errors import ParameterError
from hebench.models.shared import shared_tensors
from hebench.protections.selective.agreement import client_map, mask_from
from hebench.protections.selective.mask_source import MASK_SOURCES
from hebench.protections.selective.masks import Sensitivity
from hebench.protections.selective.spec import SelectiveSpec

Mask = dict[str, torch.Tensor]


def _class_sensitivity(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> dict[str, torch.Tensor]:
    """An encoder classifying blocks (hebench's BERT): the mean per-block ``|dL/dw|``, as the language task's."""
    named = shared_tensors(model)
    total = [torch.zeros_like(p) for _, p in named]
    was_training = model.training
    model.eval()
    for i in range(len(x)):
        logits = model(x[i : i + 1].reshape(1, 1, 1, -1))
        grads = torch.autograd.grad(F.cross_entropy(logits, y[i : i + 1]), [p for _, p in named])
        for acc, g in zip(total, grads, strict=True):
            acc += g.detach().abs()
    model.train(was_training)
    return {n: t / max(len(x), 1) for (n, _), t in zip(named, total, strict=True)}


def _score(
    model: nn.Module, spec: SelectiveSpec, blocks: torch.Tensor, labels: torch.Tensor | None, seed: int
) -> np.ndarray:
    """One client's map, as its party makes it (a decoder's next-token sensitivity is the language task's own)."""
    from hebench.models.language.task import NEXT_TOKEN

    sensitivity: Sensitivity = NEXT_TOKEN.sensitivity if labels is None else _class_sensitivity
    return client_map(spec, model, blocks, blocks if labels is None else labels, seed, sensitivity)


def source_mask(
    spec: SelectiveSpec,
    model: nn.Module,
    source: str,
    attacked: tuple[torch.Tensor, torch.Tensor | None],
    held: Sequence[tuple[torch.Tensor, torch.Tensor | None]],
    seed: int,
) -> Mask:
    """Per update tensor, True where the coordinate is encrypted: ``spec``'s mask from ``source``'s data.

    ``attacked``: the victim's attacked blocks (and labels); ``held``: every client's own blocks (the victim's
    first), as the run's clients hold them; ``seed``: the suite's (a random mask's scores)."""
    if source not in MASK_SOURCES:
        raise ParameterError(f"mask source {source!r} is unknown", f"use one of {', '.join(MASK_SOURCES)}")
    if spec.mask == "layers":
        flat = mask_from(spec, model, None)
    else:
        if spec.mask != "sensitivity" or source == "global":  # every client's map (a data-free map: all equal)
            chosen = list(held)
        elif source == "sample":
            chosen = [attacked]
        else:
            chosen = list(held[:1])
        if not chosen:
            raise ParameterError(f"a {source} mask needs the clients' blocks", "pass every client's blocks")
        flat = mask_from(spec, model, sum(_score(model, spec, b, y, seed) for b, y in chosen))
    return unflat_mask(model, flat)


def unflat_mask(model: nn.Module, flat: np.ndarray) -> Mask:
    """A flat mask (update order) as one boolean tensor per shared tensor."""
    named = shared_tensors(model)
    parts = torch.from_numpy(np.asarray(flat, dtype=bool)).split([p.numel() for _, p in named])
    return {name: part.reshape(p.shape) for (name, p), part in zip(named, parts, strict=True)}
