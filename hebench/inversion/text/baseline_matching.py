"""What the optimisation baseline matches, shared by its serial and batched objectives: the observed coordinates,
the distances, the adversary's eager copy of the model and the dummy's soft next-token loss."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Literal

import torch

from hebench.inversion.text.observation import TextObservation

Distance = Literal["cosine", "l2", "tag"]
DISTANCES: tuple[Distance, ...] = ("cosine", "l2", "tag")


@dataclass(frozen=True)
class Targets:
    """The model's parameters the view shows (in the update's order), their visible coordinates' observed values
    (flat, float32) and those coordinates' indices in the concatenation of the parameters' flattened gradients."""

    names: tuple[str, ...]
    observed: torch.Tensor
    visible: torch.Tensor | None  # (seen,) int64; None: every coordinate

    @property
    def empty(self) -> bool:
        return not self.names or self.observed.numel() == 0

    def seen(self, flat: torch.Tensor) -> torch.Tensor:
        """The visible coordinates of ``flat``, a concatenation of the parameters' flattened gradients."""
        return flat if self.visible is None else flat.index_select(0, self.visible)


def targets_of(obs: TextObservation, model: torch.nn.Module, device: torch.device) -> Targets:
    """The coordinates of ``model``'s parameters that ``obs`` shows, on ``device``."""
    assert obs.update is not None
    named = dict(model.named_parameters())
    names, values, masks = [], [], []
    for name in obs.update:
        seen = obs.tensor(name)
        if name not in named or seen is None:
            continue
        value, mask = seen
        names.append(name)
        values.append(value.detach().reshape(-1).float().cpu())
        masks.append(torch.ones(value.numel(), dtype=torch.bool) if mask is None else mask.reshape(-1).bool().cpu())
    if not names:
        return Targets((), torch.zeros(0, device=device), None)
    flat_mask = torch.cat(masks)
    if bool(flat_mask.all()):
        return Targets(tuple(names), torch.cat(values).to(device), None)
    visible = flat_mask.nonzero().reshape(-1)
    return Targets(tuple(names), torch.cat(values)[flat_mask].to(device), visible.to(device))


def distance(kind: Distance, dummy: torch.Tensor, observed: torch.Tensor, l1: float) -> torch.Tensor:
    """Cosine distance (LAMP), squared L2, or TAG's squared L2 + ``l1`` x L1, of two flat vectors."""
    if kind == "cosine":
        return 1 - (dummy @ observed) / (dummy.norm() * observed.norm()).clamp_min(1e-30)
    diff = dummy - observed
    l2 = (diff * diff).sum()
    return l2 if kind == "l2" else l2 + l1 * diff.abs().sum()


def soft_lm_loss(soft: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
    """The next-token loss of soft tokens ``soft`` (batch, length, V) that are their own targets, given the model's
    output ``logits`` on them."""
    return -(soft[:, 1:] * logits[:, :-1].log_softmax(-1)).sum(-1).mean()


def eager_twin(model: torch.nn.Module, device: torch.device) -> torch.nn.Module:
    """The adversary's copy of the model on ``device``, with plain (eager) attention: matching differentiates the
    model's gradient, and the fused CPU attention has no second derivative."""
    twin = copy.deepcopy(model).to(device)
    inner = twin.get_base_model() if hasattr(twin, "get_base_model") else twin
    inner.config._attn_implementation = "eager"
    return twin


def name_of(model: torch.nn.Module, param: torch.nn.Parameter) -> str:
    """``param``'s name in ``model``."""
    return next(name for name, p in model.named_parameters() if p is param)
