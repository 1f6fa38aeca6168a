"""ResNet-18 and ResNet-50 (He et al., 2016) with torchvision's layout and parameter names.

Written here because torchvision's PyPI wheels link CUDA libraries and fail to
import beside the CPU build of torch; the architectures and state-dict keys
match ``torchvision.models.resnet18`` (11,689,512 parameters for 1,000 classes)
and ``resnet50`` (25,557,032). Both take any input size (the stem's stride and
pooling are torchvision's; a 32x32 image reaches the last stage at 1x1).
"""

from __future__ import annotations

import torch
from torch import nn


class BasicBlock(nn.Module):
    def __init__(self, inplanes: int, planes: int, stride: int = 1) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample: nn.Module | None = None
        if stride != 1 or inplanes != planes:
            self.downsample = nn.Sequential(nn.Conv2d(inplanes, planes, 1, stride, bias=False), nn.BatchNorm2d(planes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        return self.relu(self.bn2(self.conv2(out)) + identity)


class Bottleneck(nn.Module):
    """torchvision's ResNet v1.5 bottleneck: the stride sits on the 3x3 convolution."""

    expansion = 4

    def __init__(self, inplanes: int, planes: int, stride: int = 1) -> None:
        super().__init__()
        width, out = planes, planes * self.expansion
        self.conv1 = nn.Conv2d(inplanes, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, out, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(out)
        self.relu = nn.ReLU(inplace=True)
        self.downsample: nn.Module | None = None
        if stride != 1 or inplanes != out:
            self.downsample = nn.Sequential(nn.Conv2d(inplanes, out, 1, stride, bias=False), nn.BatchNorm2d(out))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        return self.relu(self.bn3(self.conv3(out)) + identity)


class ResNet(nn.Module):
    """torchvision's ResNet: a 7x7 stem, four stages of ``blocks``, global average pooling, a linear head."""

    def __init__(
        self, block: type[BasicBlock | Bottleneck], blocks: tuple[int, ...], num_classes: int, in_channels: int
    ) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        expansion = getattr(block, "expansion", 1)
        inplanes = 64
        for i, (planes, count) in enumerate(zip((64, 128, 256, 512), blocks, strict=True), start=1):
            stride = 1 if i == 1 else 2
            layers = [block(inplanes, planes, stride)]
            inplanes = planes * expansion
            layers += [block(inplanes, planes) for _ in range(count - 1)]
            setattr(self, f"layer{i}", nn.Sequential(*layers))
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512 * expansion, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


class ResNet18(ResNet):
    def __init__(self, num_classes: int = 1000, in_channels: int = 3) -> None:
        super().__init__(BasicBlock, (2, 2, 2, 2), num_classes, in_channels)


class ResNet50(ResNet):
    def __init__(self, num_classes: int = 1000, in_channels: int = 3) -> None:
        super().__init__(Bottleneck, (3, 4, 6, 3), num_classes, in_channels)
