"""Model ↔ flat update vector, and the two ciphertext layouts.

``flat``: the whole model as one vector, chunked across ciphertexts with no
per-layer waste (hebench's default). ``per-layer``: one encrypted vector per
parameter tensor, the FedML-HE / NVIDIA FLARE layout, kept as a baseline.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn


def model_vector(model: nn.Module) -> np.ndarray:
    return torch.cat([p.detach().reshape(-1) for p in model.state_dict().values()]).float().numpy()


def load_vector(model: nn.Module, vector: np.ndarray) -> None:
    state, offset = model.state_dict(), 0
    for name, tensor in state.items():
        n = tensor.numel()
        state[name] = torch.from_numpy(np.array(vector[offset : offset + n])).reshape(tensor.shape).to(tensor.dtype)
        offset += n
    model.load_state_dict(state)


def layer_sizes(model: nn.Module, packing: str) -> list[int]:
    """Lengths of the vectors a model's update is split into."""
    sizes = [t.numel() for t in model.state_dict().values()]
    return [sum(sizes)] if packing == "flat" else sizes


def split(vector: np.ndarray, sizes: list[int]) -> list[np.ndarray]:
    return np.split(vector, np.cumsum(sizes)[:-1])
