"""The shared shape of every dataset hebench trains on: per-client tensors and a test set."""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class ClientData:
    client_id: str
    x: torch.Tensor  # (n, channels, height, width), float32 in [0, 1]
    y: torch.Tensor  # (n,), int64

    def __len__(self) -> int:
        return int(self.y.shape[0])


@dataclass(frozen=True)
class FederatedData:
    name: str
    clients: tuple[ClientData, ...]
    test_x: torch.Tensor
    test_y: torch.Tensor
    num_classes: int

    @property
    def input_shape(self) -> tuple[int, int, int]:
        return tuple(self.test_x.shape[1:])  # type: ignore[return-value]

    def summary(self) -> dict[str, object]:
        return {
            "dataset": self.name,
            "clients": len(self.clients),
            "samples_per_client": [len(c) for c in self.clients],
            "test_samples": int(self.test_y.shape[0]),
            "num_classes": self.num_classes,
            "input_shape": list(self.input_shape),
        }
