"""Partition a centralised dataset across clients: IID or Dirichlet(alpha) over labels."""

from __future__ import annotations

import numpy as np
import torch

from hebench.data.federated import ClientData
from hebench.errors import DatasetError


def partition(
    x: torch.Tensor,
    y: torch.Tensor,
    clients: int,
    *,
    split: str = "iid",
    alpha: float = 0.5,
    seed: int = 0,
    min_per_client: int = 2,
) -> tuple[ClientData, ...]:
    """Split (x, y) into ``clients`` shards; deterministic given ``seed``."""
    n = int(y.shape[0])
    if clients < 1:
        raise DatasetError(f"cannot split into {clients} clients", "set data.clients >= 1")
    if n < clients * min_per_client:
        raise DatasetError(
            f"{n} samples cannot give {clients} clients at least {min_per_client} each",
            "use fewer clients, a larger dataset"
            + (", or data.min_per_client: 1 (clients of one sample)" if min_per_client > 1 else ""),
        )
    rng = np.random.default_rng(seed)
    if split == "iid":
        shards = np.array_split(rng.permutation(n), clients)
    elif split == "dirichlet":
        if alpha <= 0:
            raise DatasetError(f"Dirichlet alpha must be > 0, got {alpha}", "set data.alpha to e.g. 0.5")
        shards = _dirichlet(y.numpy(), clients, alpha, rng, min_per_client)
    else:
        raise DatasetError(f"unknown split '{split}'", "use split: iid or split: dirichlet")
    return tuple(
        ClientData(f"client-{i}", x[torch.as_tensor(idx)], y[torch.as_tensor(idx)]) for i, idx in enumerate(shards)
    )


def _dirichlet(labels: np.ndarray, clients: int, alpha: float, rng: np.random.Generator, minimum: int) -> list:
    """Per class, draw client proportions from Dir(alpha); retry until every client has ``minimum``."""
    for _ in range(100):
        shards: list[list[int]] = [[] for _ in range(clients)]
        for cls in np.unique(labels):
            idx = rng.permutation(np.flatnonzero(labels == cls))
            cuts = (np.cumsum(rng.dirichlet([alpha] * clients)) * len(idx)).astype(int)[:-1]
            for shard, part in zip(shards, np.split(idx, cuts), strict=True):
                shard.extend(part.tolist())
        if min(len(s) for s in shards) >= minimum:
            return [np.array(sorted(s)) for s in shards]
    raise DatasetError(
        f"Dirichlet(alpha={alpha}) left a client with fewer than {minimum} samples in 100 draws",
        "raise data.alpha or use fewer clients",
    )
