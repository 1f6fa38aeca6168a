"""A restart's start: its dummy images and its labels (inferred, given, or a soft dummy to optimise), drawn from
the restart's own seed, so a restart starts at the same point whichever engine runs it."""

from __future__ import annotations

import torch

from hebench.inversion.attacks.labels import infer_label
from hebench.inversion.views.observation import Observation


def start_images(obs: Observation, init: str, gen: torch.Generator) -> torch.Tensor:
    """The dummy images' start: randn (DLG, breaching) or U(0, 1) (``rand``)."""
    shape = (obs.images, *obs.input_shape)
    return torch.randn(shape, generator=gen) if init == "randn" else torch.rand(shape, generator=gen)


def start_labels(obs: Observation, known_label: bool, gen: torch.Generator) -> tuple[torch.Tensor, str]:
    """The attacker's labels: inferred (iDLG) or given when the recipe knows them, else a soft dummy to optimise
    (drawn from ``gen`` after the images)."""
    if known_label:
        if obs.images == 1:
            label = infer_label(obs)
            if label is not None:
                return torch.tensor([label]), "inferred"
        elif obs.labels is not None:
            return obs.labels.clone(), "given"
    return torch.randn((obs.images, obs.num_classes), generator=gen), "optimised"
