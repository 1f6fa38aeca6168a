"""The sigmoid LeNet of DLG (Zhu et al., mit-han-lab/dlg), for 28x28x1 or 32x32x3 inputs.

On 3x32x32 inputs with 100 classes it is DLG's CIFAR-100 network exactly
(12-channel 5x5 convolutions, strides 2, 2, 1, a 768 -> 100 linear layer,
85,036 parameters); ``dlg_init`` is DLG's initialisation.

Sigmoid activations and strided convolutions keep gradients twice
differentiable and informative, which is what gradient inversion needs.
"""

from __future__ import annotations

import torch
from torch import nn


class LeNet(nn.Module):
    def __init__(self, num_classes: int = 10, in_channels: int = 3, image_size: int = 32) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(in_channels, 12, kernel_size=5, padding=2, stride=2),
            nn.Sigmoid(),
            nn.Conv2d(12, 12, kernel_size=5, padding=2, stride=2),
            nn.Sigmoid(),
            nn.Conv2d(12, 12, kernel_size=5, padding=2, stride=1),
            nn.Sigmoid(),
        )
        side = (image_size + 1) // 2
        side = (side + 1) // 2
        self.fc = nn.Linear(12 * side * side, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.body(x).flatten(1))


def dlg_init(model: nn.Module) -> nn.Module:
    """DLG's initialisation (mit-han-lab/dlg): every weight and bias drawn from U(-0.5, 0.5)."""
    for p in model.parameters():
        torch.nn.init.uniform_(p, -0.5, 0.5)
    return model
