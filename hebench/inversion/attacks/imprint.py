"""Robbing the Fed (Fowl, Geiping et al., 2022): the images read out of the imprint block a malicious server
planted (:mod:`hebench.inversion.attacks.trap_weights`); analytic, so one restart is all there is and the seed
is unused. Labels from the last layer's bias gradient.

Recipe: ``optimizer: imprint-readout`` (``attacks/imprint.yaml``).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from hebench.inversion.attacks.config import AttackConfig
from hebench.inversion.attacks.labels import labels_from_last_bias
from hebench.inversion.attacks.matching import DISTANCES
from hebench.inversion.attacks.reconstruction import Reconstruction, prior
from hebench.inversion.attacks.registry import one_by_one, register
from hebench.inversion.attacks.trap_weights import read_out
from hebench.inversion.attacks.upload import dummy_upload
from hebench.inversion.views.observation import Observation


def read(obs: Observation, cfg: AttackConfig, seed: int) -> Reconstruction:
    """The images read from the imprint block's rows, and how well they explain the upload (cosine)."""
    if obs.gradients is None:
        return prior(obs)
    images, hits = read_out(obs.model, obs.gradients, obs.images)
    labels = labels_from_last_bias(obs).to(images.device)
    with torch.enable_grad():  # how well the read-out explains the upload (its own check, as the other attacks')
        x = images.clone().to(obs.gradients[0].device).requires_grad_(True)
        upload = dummy_upload(obs, x, labels.to(x.device))
        fit = float(DISTANCES["cosine"](upload, obs.gradients, obs.masks).detach())
    return Reconstruction(images, labels.cpu(), fit, True, [float(hits)], label_source="inferred")


@register("imprint-readout")
def reconstruct(observations: Sequence[Observation], cfg: AttackConfig, seeds: Sequence[int]) -> list[Reconstruction]:
    """One read-out per observation (nothing to batch: no optimisation)."""
    return one_by_one(read, observations, cfg, seeds)
