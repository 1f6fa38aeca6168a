"""iDLG: the label of a single-image batch from the sign of the last layer's gradient.

For cross-entropy, dL/db_i = p_i - y_i is negative only at the true label,
and dL/dW_i = (p_i - y_i) h with non-negative features h (sigmoid/ReLU), so the
true label's row sums negative (also for the sum of E local steps on that image). A
mask-aware attacker uses the visible coordinates only; FedML-HE's attacker reads what it sees.
"""

from __future__ import annotations

import torch

from hebench.inversion.views.observation import Observation


def infer_label(obs: Observation) -> int | None:
    if obs.gradients is None or obs.images != 1:
        return None
    weight, bias = obs.gradients[-2], obs.gradients[-1]
    masks = obs.masks
    if bias.ndim == 1 and bias.shape[0] == obs.num_classes and (masks is None or bool(masks[-1].all())):
        return int(torch.argmin(bias))
    if weight.ndim == 2 and weight.shape[0] == obs.num_classes:
        visible = torch.ones_like(weight, dtype=torch.bool) if masks is None else masks[-2]
        if bool(visible.any(dim=1).all()):
            return int(torch.argmin((weight * visible).sum(dim=1)))
    return None


def labels_from_last_bias(obs: Observation) -> torch.Tensor:
    """A batch's labels, one per image, from the last layer's bias gradient: its most negative classes.

    Each image pushes ``p - y`` into that gradient, negative only at its own label, so the ``images``
    most negative entries are the labels when they are distinct (repeated labels are not counted).
    """
    assert obs.gradients is not None
    bias = obs.gradients[-1]
    if bias.ndim != 1 or bias.shape[0] != obs.num_classes:
        return torch.zeros(obs.images, dtype=torch.long)
    k = min(obs.images, obs.num_classes)
    found = torch.argsort(bias)[:k].cpu()
    return torch.cat([found, found[:1].repeat(obs.images - k)]) if k < obs.images else found
