"""What the attacker (the aggregator) sees in each configuration, and what it knows.

The observed tensors are a pseudo-gradient per parameter: the gradient of one
local step (DLG's threat model), or ``(w_0 - w_E) / lr`` after E local steps
(the realistic FedAvg upload), or the FedAvg mean of N clients' uploads (what a
party that only sees the aggregate learns). Under full HE the aggregator sees
nothing usable; under selective encryption it sees the plaintext coordinates,
and the attacker is one of:

- ``mask-aware``: knows which coordinates are encrypted and leaves them out of
  its loss (hebench's original view; the strongest selective attacker).
- ``fedml-he-zeros``: FedML-HE's attacker: matches the whole update, reading the
  encrypted coordinates as zeros.
- ``fedml-he-noise``: as above, reading them as seeded Gaussian noise at the
  scale of the visible coordinates of the same tensor (what an attacker that
  decodes ciphertext as plaintext-scale values would see).

``mask-aware`` and ``fedml-he-zeros`` carry the same tensors and differ only in
the loss mask.

Non-weight state: an update carries the parameters only (:mod:`hebench.models.shared`); BatchNorm's
running statistics and counters stay with each client, so no view holds them (:data:`SEES_LOCAL_STATE`),
and a flat mask indexes the parameters alone.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from hebench.config import DPSpec
from hebench.inversion.views.local_update import LocalTraining
from hebench.models.shared import shared_tensors
from hebench.results.attack_views import View

Attacker = Literal["mask-aware", "fedml-he-zeros", "fedml-he-noise"]
ATTACKERS: tuple[str, ...] = ("mask-aware", "fedml-he-zeros", "fedml-he-noise")
SEES_LOCAL_STATE = False  # the aggregator never receives buffers (BatchNorm statistics): kept by each client


@dataclass(frozen=True)
class Observation:
    model: nn.Module
    gradients: tuple[torch.Tensor, ...] | None  # None: everything encrypted
    masks: tuple[torch.Tensor, ...] | None  # coordinates in the loss per parameter; None: all
    input_shape: tuple[int, int, int]
    num_classes: int
    batch_size: int  # images per client
    clients: int = 1  # uploads averaged into what was seen (FedAvg, equal sample counts)
    local: LocalTraining | None = None  # None: one gradient (DLG's threat model)
    labels: torch.Tensor | None = None  # labels granted to the attacker ("given"); None: inferred or optimised
    attacker: str = "mask-aware"
    visible: tuple[torch.Tensor, ...] | None = None  # the plaintext coordinates (None: all, or nothing seen)

    @property
    def images(self) -> int:
        """Images behind the observation (every client's batch)."""
        return self.batch_size * self.clients

    @property
    def visible_fraction(self) -> float:
        if self.gradients is None:
            return 0.0
        if self.visible is None:
            return 1.0
        total = sum(m.numel() for m in self.visible)
        return float(sum(m.sum() for m in self.visible)) / max(total, 1)

    def to(self, device: str | torch.device) -> Observation:
        """The same observation with its model and tensors on ``device``."""

        def move(ts: tuple[torch.Tensor, ...] | None) -> tuple[torch.Tensor, ...] | None:
            return None if ts is None else tuple(t.to(device) for t in ts)

        import copy

        return replace(
            self,
            model=copy.deepcopy(self.model).to(device),
            gradients=move(self.gradients),
            masks=move(self.masks),
            visible=move(self.visible),
            labels=None if self.labels is None else self.labels.to(device),
        )


def victim_gradients(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, ...]:
    loss = F.cross_entropy(model(x), y)
    return tuple(g.detach() for g in torch.autograd.grad(loss, list(model.parameters())))


def client_uploads(
    model: nn.Module,
    xs: list[torch.Tensor],
    ys: list[torch.Tensor],
    local: LocalTraining | None,
    dp: DPSpec | None = None,
    dp_lr: float = 0.1,
    seed: int = 0,
    first: int = 0,
) -> list[tuple[torch.Tensor, ...]]:
    """Each client's upload (client ``first + i`` for ``xs[i]``): a gradient, or its E-step update; with ``dp``
    noised first (:mod:`hebench.protections.dp.attacker_view`, seeded by ``seed`` and the client)."""
    from hebench.inversion.views.local_update import client_update
    from hebench.protections.dp.attacker_view import dp_upload

    if dp is not None:
        rngs = [np.random.default_rng([seed, first + i, 0xD1FF]) for i in range(len(xs))]
        return [dp_upload(model, x, y, local, dp, dp_lr, rng) for x, y, rng in zip(xs, ys, rngs, strict=True)]
    return [
        victim_gradients(model, x, y) if local is None else client_update(model, x, y, local)
        for x, y in zip(xs, ys, strict=True)
    ]


def mean_upload(uploads: list[tuple[torch.Tensor, ...]]) -> tuple[torch.Tensor, ...]:
    """FedAvg over equal sample counts."""
    return tuple(torch.stack(ts).mean(0) for ts in zip(*uploads, strict=True))


def victim_update(
    model: nn.Module,
    xs: list[torch.Tensor],
    ys: list[torch.Tensor],
    local: LocalTraining | None,
    dp: DPSpec | None = None,
    dp_lr: float = 0.1,
    seed: int = 0,
) -> tuple[torch.Tensor, ...]:
    """What the clients upload, averaged (FedAvg over equal sample counts): gradients, or E-step updates;
    with ``dp`` each client's upload is noised first (:mod:`hebench.protections.dp.attacker_view`, seeded by
    ``seed``)."""
    return mean_upload(client_uploads(model, xs, ys, local, dp, dp_lr, seed))


def parameter_masks(model: nn.Module, flat_mask: np.ndarray) -> tuple[torch.Tensor, ...]:
    """Split a mask over the flat update (parameter order: buffers are not in it) into one mask per parameter."""
    out, offset = [], 0
    for _, tensor in shared_tensors(model):
        n = tensor.numel()
        out.append(torch.as_tensor(np.asarray(flat_mask[offset : offset + n], dtype=bool)).reshape(tensor.shape))
        offset += n
    return tuple(out)


def _fill(g: torch.Tensor, visible: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """Hidden coordinates as noise at the RMS of the tensor's visible coordinates (zeros if none is visible)."""
    shown = g[visible]
    scale = float(shown.pow(2).mean().sqrt()) if shown.numel() else 0.0
    noise = torch.randn(g.shape, generator=gen) * scale
    return torch.where(visible, g, noise)


def observe(
    model: nn.Module,
    grads: tuple[torch.Tensor, ...],
    view: str,
    flat_mask: np.ndarray | None,
    shape: tuple[int, int, int],
    classes: int,
    batch: int,
    *,
    attacker: str = "mask-aware",
    clients: int = 1,
    local: LocalTraining | None = None,
    labels: torch.Tensor | None = None,
    seed: int = 0,
) -> Observation:
    """The aggregator's view: ``raw`` (all), ``he`` (nothing), ``selective`` (coordinates where the mask is False)."""
    base = Observation(model, None, None, shape, classes, batch, clients, local, labels, attacker)
    if view == View.RAW:
        return replace(base, gradients=grads)
    if view == View.HE:
        return base
    assert flat_mask is not None
    if flat_mask.all():  # everything encrypted: nothing usable, as under full HE
        return base
    visible = parameter_masks(model, ~flat_mask)
    seen = tuple(g * m for g, m in zip(grads, visible, strict=True))
    if attacker == "mask-aware":
        return replace(base, gradients=seen, masks=visible, visible=visible)
    if attacker == "fedml-he-zeros":
        return replace(base, gradients=seen, visible=visible)
    gen = torch.Generator().manual_seed(seed)
    noisy = tuple(_fill(g, m, gen) for g, m in zip(grads, visible, strict=True))
    return replace(base, gradients=noisy, visible=visible)
