"""What an attack returns for one restart, and the floor it returns when it sees nothing."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from hebench.inversion.views.observation import Observation


@dataclass
class Reconstruction:
    images: torch.Tensor  # (B, C, H, W) in [0, 1]
    labels: torch.Tensor  # (B,)
    grad_loss: float  # the attacker's own objective at the kept iterate
    finite: bool = True
    trace: list[float] = field(default_factory=list)
    prior_only: bool = False
    label_source: str = "optimised"  # inferred (iDLG) | given | optimised (soft label) | none
    wall_s: float = 0.0  # time this restart took (batched: its batch's time over the restarts in it)
    cpu_s: float = 0.0  # CPU time of this process during the restart (all its threads; batched: the share)
    batch: int = 1  # restarts optimised together with this one (1: serial)


def prior(obs: Observation) -> Reconstruction:
    """What an attacker outputs with nothing to match: the middle of the box, class 0 (the floor)."""
    shape = (obs.images, *obs.input_shape)
    return Reconstruction(
        torch.full(shape, 0.5), torch.zeros(obs.images, dtype=torch.long), math.nan, True, [], True, "none"
    )
