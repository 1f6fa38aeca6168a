"""The optimisation baseline's objective for every restart in one pass, as the image attacks' batched engine
(:class:`hebench.inversion.attacks.restarts.BatchObjective`) does: ``vmap`` over restarts of ``grad_and_value``
of the matching loss, whose dummy update is itself ``torch.func.grad`` of the soft next-token loss through a
``functional_call`` of the model. Each restart keeps its own loss and gradient; a dropout the model applies is
drawn per restart (``randomness="different"``), as the serial loop draws it per call."""

from __future__ import annotations

import torch
from torch.func import functional_call, grad_and_value, vmap

from hebench.inversion.text.baseline_matching import Distance, Targets, distance, soft_lm_loss


class BatchedObjective:
    """Each restart's matching loss and its gradient in the restart's logits, all restarts in one vmapped pass."""

    def __init__(
        self,
        model: torch.nn.Module,
        wte_name: str,
        targets: Targets,
        kind: Distance,
        l1: float,
        prior: float,
    ) -> None:
        names = targets.names
        state = {n: p.detach() for n, p in model.named_parameters()}
        state.update({n: b.detach() for n, b in model.named_buffers()})
        matched = {n: state.pop(n) for n in names}
        fixed = state

        def lm_loss(trained: dict[str, torch.Tensor], soft: torch.Tensor) -> torch.Tensor:
            params = {**fixed, **trained}
            out = functional_call(model, params, (), {"inputs_embeds": soft @ params[wte_name]})
            return soft_lm_loss(soft, out.logits)

        def restart_loss(z: torch.Tensor) -> torch.Tensor:
            soft = z.softmax(-1)
            grads, lm = grad_and_value(lm_loss)(matched, soft)
            flat = torch.cat([grads[n].reshape(-1) for n in names])
            seen = targets.seen(flat)
            return distance(kind, seen, targets.observed, l1) + prior * lm

        self._fn = vmap(grad_and_value(restart_loss), randomness="different")

    def __call__(self, logits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """(loss per restart, ∂loss/∂logits or None when a loss is not finite) at ``logits`` (R, batch, length, V)."""
        grad, loss = self._fn(logits.detach())
        if not bool(torch.isfinite(loss).all()):
            return loss, None
        return loss, grad
