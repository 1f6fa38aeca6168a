"""Which of a model's tensors a client shares (its update), and which stay local.

Shared: the trainable parameters (``named_parameters`` order; a tied tensor once; a frozen parameter,
such as the base under LoRA adapters, never). Local: every buffer, notably BatchNorm's running mean and
variance and its ``num_batches_tracked`` counter. Those are statistics of the client's own data, so each
client keeps its own, as SiloBN does (Andreux et al., 2020: local statistics, shared learned
parameters): they are never averaged, never encrypted, never fed into a clipped quantiser, and the
aggregator (the attacker) never sees them, in any mode. Selective masks and the attack views index the
update in this order.
"""

from __future__ import annotations

import torch
from torch import nn

LOCAL_STATE = "buffers"  # what never leaves a client: every buffer (BatchNorm statistics and counters)


def shared_tensors(model: nn.Module) -> list[tuple[str, torch.Tensor]]:
    """The tensors an update carries, in update order: the trainable parameters (tied ones once, frozen ones never)."""
    return [(name, p) for name, p in model.named_parameters() if p.requires_grad]
