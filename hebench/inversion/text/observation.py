"""What a text-leakage view holds: an update's named tensors (or nothing), the coordinates seen, and public facts.

The update is a pseudo-gradient, one tensor per trainable parameter, named as the model names it
(:func:`hebench.models.language.adapter_update.adapter_update`): the gradient of one step, or
``(w_0 - w_E) / lr`` after E local SGD steps, or what a protocol let through of it (a sum of clients, noise
added, coordinates encrypted). ``visible`` marks, per tensor, the coordinates the adversary read in plaintext
(None: all of them). ``model`` is the model the victim trained from, as the adversary holds it: the global model
it sent (base and adapters). The rest is what the training protocol makes public (block length, batch size,
local steps): an attack may use it, never the victim's text.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import torch
from torch import nn


@dataclass(frozen=True)
class TextObservation:
    model: nn.Module
    update: dict[str, torch.Tensor] | None  # None: nothing usable (encrypted, absent)
    length: int  # tokens per sequence (the run's block length)
    visible: dict[str, torch.Tensor] | None = None  # True where the coordinate was read in plaintext; None: all
    batch_size: int = 1  # sequences per local step
    steps: int = 1  # local steps behind the update
    clients: int = 1  # clients whose updates are summed into what was seen
    view: str = "raw"
    notes: tuple[str, ...] = field(default_factory=tuple)  # what the view did, in words

    @property
    def sequences_bound(self) -> int:
        """At most this many sequences are behind the update (the protocol's batch x steps x clients)."""
        return self.batch_size * self.steps * self.clients

    @property
    def tokens_bound(self) -> int:
        """At most this many (token, position) inputs are behind the update."""
        return self.sequences_bound * self.length

    def tensor(self, name: str) -> tuple[torch.Tensor, torch.Tensor | None] | None:
        """The observed tensor ``name`` and its visible mask (None: all visible); None when the view lacks it or
        shows none of its coordinates."""
        if self.update is None or name not in self.update:
            return None
        mask = None if self.visible is None else self.visible.get(name)
        if mask is not None:
            if not bool(mask.any()):
                return None
            if bool(mask.all()):
                mask = None
        return self.update[name], mask

    @property
    def visible_fraction(self) -> float:
        if self.update is None:
            return 0.0
        if self.visible is None:
            return 1.0
        total = sum(t.numel() for t in self.update.values())
        seen = sum(int(self.visible[n].sum()) if n in self.visible else t.numel() for n, t in self.update.items())
        return seen / max(total, 1)

    def on(self, device: str | torch.device) -> TextObservation:
        """This observation with its tensors on ``device`` (the model is not moved: see :func:`model_on`)."""
        if self.update is None:
            return self
        moved = {name: t.to(device) for name, t in self.update.items()}
        seen = None if self.visible is None else {name: m.to(device) for name, m in self.visible.items()}
        return replace(self, update=moved, visible=seen)
