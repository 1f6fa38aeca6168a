"""Model ↔ flat update vector, and the two ciphertext layouts.

What travels: the model's trainable parameters only; every buffer (BatchNorm's running statistics and
counters) stays local to its client (:mod:`hebench.models.shared` says why). The evaluating client
tests the global parameters with its own statistics.

Checkpoints hold the whole ``state_dict`` (the evaluating client's statistics included), the layout
every hebench version wrote; :func:`load_vector` reads either layout.

``flat``: the whole update as one vector, chunked across ciphertexts with no per-layer waste (hebench's
default). ``per-layer``: one encrypted vector per parameter tensor, the FedML-HE / NVIDIA FLARE layout,
kept as a baseline.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from hebench.errors import PartyError
from hebench.models.shared import shared_tensors


def model_vector(model: nn.Module) -> np.ndarray:
    """The update: every parameter, flattened, float32 (a fresh array)."""
    return torch.cat([p.detach().reshape(-1).float() for _, p in shared_tensors(model)]).numpy()


def state_vector(model: nn.Module) -> np.ndarray:
    """The whole ``state_dict`` flattened (parameters and buffers): the checkpoint layout."""
    return torch.cat([t.detach().reshape(-1).float() for t in model.state_dict().values()]).numpy()


@torch.no_grad()
def load_vector(model: nn.Module, vector: np.ndarray) -> None:
    """Load an update (parameters only; buffers kept) or a checkpoint (the whole ``state_dict``)."""
    params = shared_tensors(model)
    size = sum(p.numel() for _, p in params)
    if len(vector) == size:
        offset = 0
        for _, p in params:
            n = p.numel()
            p.copy_(torch.from_numpy(np.asarray(vector[offset : offset + n])).reshape(p.shape))
            offset += n
        return
    state = model.state_dict()
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
    model.load_state_dict(state)


def layer_sizes(model: nn.Module, packing: str) -> list[int]:
    """Lengths of the vectors a model's update is split into."""
    sizes = [p.numel() for _, p in shared_tensors(model)]
    return [sum(sizes)] if packing == "flat" else sizes


def split(vector: np.ndarray, sizes: list[int]) -> list[np.ndarray]:
    return np.split(vector, np.cumsum(sizes)[:-1])
