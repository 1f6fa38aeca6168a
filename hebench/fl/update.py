"""Model ↔ flat update vector, and the two ciphertext layouts.

What travels: the model's trainable parameters only; every buffer (BatchNorm's running statistics and
counters) stays local to its client (:mod:`hebench.models.shared` says why). The evaluating client
tests the global parameters with its own statistics.

Checkpoints hold the ``state_dict`` less its frozen parameters (the evaluating client's statistics included):
for a model with nothing frozen that is the whole ``state_dict``, the layout every hebench version wrote; for a
LoRA model it is the adapters (and any buffers), never the frozen base each party rebuilds from the suite (the
pretrained file, or the seed). :func:`load_vector` reads either an update or a checkpoint.

``flat``: the whole update as one vector, chunked across ciphertexts with no per-layer waste (hebench's
default). ``per-layer``: one encrypted vector per parameter tensor, the FedML-HE / NVIDIA FLARE layout,
kept as a baseline.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from hebench.errors import PartyError
from hebench.models.shared import load_shared, shared_tensors


def model_vector(model: nn.Module) -> np.ndarray:
    """The update: every parameter, flattened, float32 (a fresh array)."""
    return torch.cat([p.detach().reshape(-1).float() for _, p in shared_tensors(model)]).numpy()


def checkpoint_state(model: nn.Module) -> dict[str, torch.Tensor]:
    """The ``state_dict`` entries a checkpoint holds: every one but the frozen parameters (``state_dict`` order)."""
    frozen = {name for name, p in model.named_parameters(remove_duplicate=False) if not p.requires_grad}  # tied too
    return {name: t for name, t in model.state_dict().items() if name not in frozen}


def checkpoint_vector(model: nn.Module) -> np.ndarray:
    """The checkpoint layout, flattened (float32): :func:`checkpoint_state`'s tensors."""
    return torch.cat([t.detach().reshape(-1).float() for t in checkpoint_state(model).values()]).numpy()


@torch.no_grad()
def load_vector(model: nn.Module, vector: np.ndarray) -> None:
    """Load an update (parameters only; buffers kept) or a checkpoint (:func:`checkpoint_state`)."""
    size = sum(p.numel() for _, p in shared_tensors(model))
    if len(vector) == size:
        load_shared(model, vector)
        return
    state = checkpoint_state(model)
    if len(vector) != sum(t.numel() for t in state.values()):
        raise PartyError(
            f"a model vector of {len(vector)} values fits neither this model's {size} parameters nor its state",
            "use the same model (and hebench version) on every party; resume only from this suite's checkpoints",
        )
    offset = 0
    for name, tensor in state.items():
        n = tensor.numel()
        state[name] = torch.from_numpy(np.array(vector[offset : offset + n])).reshape(tensor.shape).to(tensor.dtype)
        offset += n
    model.load_state_dict(state, strict=len(state) == len(model.state_dict()))


def layer_sizes(model: nn.Module, packing: str) -> list[int]:
    """Lengths of the vectors a model's update is split into."""
    sizes = [p.numel() for _, p in shared_tensors(model)]
    return [sum(sizes)] if packing == "flat" else sizes


def split(vector: np.ndarray, sizes: list[int]) -> list[np.ndarray]:
    return np.split(vector, np.cumsum(sizes)[:-1])
