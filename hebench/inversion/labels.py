"""iDLG: the label of a single-image batch from the sign of the last layer's gradient.

For cross-entropy, dL/db_i = p_i - y_i is negative only at the true label,
and dL/dW_i = (p_i - y_i) h with non-negative features h (sigmoid/ReLU), so the
true label's row sums negative (also for the sum of E local steps on that image). A
mask-aware attacker uses the visible coordinates only; FedML-HE's attacker reads what it sees.
"""

from __future__ import annotations

import torch

from hebench.inversion.observation import Observation


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
