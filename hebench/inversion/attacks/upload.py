"""The dummy data's upload as the victim computed it: one gradient, or E local SGD steps per client averaged over
the clients, differentiable in the dummy data (and a soft dummy label)."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn
from torch.func import functional_call, grad

from hebench.inversion.views.local_update import LocalTraining, _loss, local_batches, simulate_update
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


def functional_upload(
    model: nn.Module, local: LocalTraining | None, clients: int, batch: int
) -> Callable[[torch.Tensor, torch.Tensor], tuple[torch.Tensor, ...]]:
    """:func:`dummy_upload` as a pure function of one restart's dummy ``(x, y)`` (``torch.func``), so that
    ``vmap`` runs many restarts in one pass with per-restart gradients that never mix."""
    names = [name for name, _ in model.named_parameters()]
    params = {name: p.detach() for name, p in model.named_parameters()}
    buffers = {name: b.detach() for name, b in model.named_buffers()}

    def loss_at(p: dict[str, torch.Tensor], x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return _loss(functional_call(model, {**p, **buffers}, (x,)), y)

    grad_at = grad(loss_at)
    if local is None and clients == 1:

        def one_gradient(x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, ...]:
            g = grad_at(params, x, y)
            return tuple(g[name] for name in names)

        return one_gradient
    steps = local or LocalTraining(steps=1, lr=1.0)
    order = local_batches(batch, steps)

    def averaged_updates(x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, ...]:
        per_client = []
        for k in range(clients):
            xk, yk = x[k * batch : (k + 1) * batch], y[k * batch : (k + 1) * batch]
            p, total = params, None
            for idx in order:
                g = grad_at(p, xk[idx], yk[idx])
                total = g if total is None else {name: total[name] + g[name] for name in names}
                p = {name: p[name] - steps.lr * g[name] for name in names}
            assert total is not None
            per_client.append(tuple(total[name] for name in names))
        if clients == 1:
            return per_client[0]
        return tuple(torch.stack(ts).mean(0) for ts in zip(*per_client, strict=True))

    return averaged_updates
