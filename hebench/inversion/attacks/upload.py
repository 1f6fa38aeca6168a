"""The dummy data's upload as the victim computed it: one gradient, or E local SGD steps per client averaged over
the clients, differentiable in the dummy data (and a soft dummy label)."""

from __future__ import annotations

import torch

from hebench.inversion.views.local_update import LocalTraining, _loss, simulate_update
from hebench.inversion.views.observation import Observation


def dummy_upload(obs: Observation, x: torch.Tensor, label: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """What the dummy data would upload under the observation's threat model (differentiable)."""
    params = list(obs.model.parameters())
    if obs.local is None and obs.clients == 1:
        loss = _loss(obs.model(x), label)
        return torch.autograd.grad(loss, params, create_graph=True)
    local = obs.local or LocalTraining(steps=1, lr=1.0)
    b = obs.batch_size
    per_client = [
        simulate_update(obs.model, x[k * b : (k + 1) * b], label[k * b : (k + 1) * b], local)
        for k in range(obs.clients)
    ]
    if obs.clients == 1:
        return per_client[0]
    return tuple(torch.stack(ts).mean(0) for ts in zip(*per_client, strict=True))
