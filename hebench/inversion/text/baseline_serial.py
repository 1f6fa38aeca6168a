"""The optimisation baseline's objective evaluated restart by restart: one forward and one double backward per
restart (the reference the batched objective of :mod:`.baseline_batch` is checked against)."""

from __future__ import annotations

import torch

from hebench.inversion.text.baseline_matching import Distance, Targets, distance, soft_lm_loss


class SerialObjective:
    """Each restart's matching loss and its gradient in the restart's logits, one restart after another."""

    def __init__(
        self,
        model: torch.nn.Module,
        wte: torch.nn.Parameter,
        targets: Targets,
        kind: Distance,
        l1: float,
        prior: float,
    ) -> None:
        named = dict(model.named_parameters())
        self.model, self.wte, self.targets = model, wte, targets
        self.params = [named[n] for n in targets.names]
        self.kind, self.l1, self.prior = kind, l1, prior

    def __call__(self, logits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """(loss per restart, ∂loss/∂logits or None when a loss is not finite) at ``logits`` (R, batch, length, V)."""
        z = logits.detach().requires_grad_(True)
        losses = []
        for r in range(z.shape[0]):
            soft = z[r].softmax(-1)
            lm = soft_lm_loss(soft, self.model(inputs_embeds=soft @ self.wte).logits)
            grads = torch.autograd.grad(lm, self.params, create_graph=True, allow_unused=True)
            flat = torch.cat(
                [(torch.zeros_like(p) if g is None else g).reshape(-1) for p, g in zip(self.params, grads, strict=True)]
            )
            seen = self.targets.seen(flat)
            losses.append(distance(self.kind, seen, self.targets.observed, self.l1) + self.prior * lm)
        total = torch.stack(losses)
        if not bool(torch.isfinite(total).all()):
            return total.detach(), None
        (grad,) = torch.autograd.grad(total.sum(), z)
        return total.detach(), grad
