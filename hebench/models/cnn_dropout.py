"""FedML's ``CNN_DropOut`` for FEMNIST (as in FedNIC): 1,206,590 parameters for 62 classes."""

from __future__ import annotations

import torch
from torch import nn


class CNNDropOut(nn.Module):
    """conv3x3 1→32, conv3x3 32→64, maxpool 2, dropout .25, fc 9216→128, dropout .5, fc 128→classes."""

    def __init__(self, num_classes: int = 62, in_channels: int = 1) -> None:
        super().__init__()
        self.conv2d_1 = nn.Conv2d(in_channels, 32, kernel_size=3)
        self.conv2d_2 = nn.Conv2d(32, 64, kernel_size=3)
        self.max_pooling = nn.MaxPool2d(2, stride=2)
        self.dropout_1 = nn.Dropout(0.25)
        self.flatten = nn.Flatten()
        self.linear_1 = nn.Linear(9216, 128)
        self.dropout_2 = nn.Dropout(0.5)
        self.linear_2 = nn.Linear(128, num_classes)
        self.relu = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.relu(self.conv2d_1(x))
        x = self.relu(self.conv2d_2(x))
        x = self.dropout_1(self.max_pooling(x))
        x = self.dropout_2(self.relu(self.linear_1(self.flatten(x))))
        return self.linear_2(x)
