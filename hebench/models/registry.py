"""Build a model by name for an input shape and class count."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from hebench.errors import ParameterError
from hebench.models.size import check_fits

Shape = tuple[int, int, int]


def _cnn_dropout(shape: Shape, classes: int, hidden: int) -> nn.Module:
    from hebench.models.cnn_dropout import CNNDropOut

    if shape[1:] != (28, 28):
        raise ParameterError(f"cnn_dropout needs 28x28 inputs, got {shape}", "use a 28x28 dataset (digits, femnist)")
    return CNNDropOut(classes, shape[0])


def _lenet(shape: Shape, classes: int, hidden: int) -> nn.Module:
    from hebench.models.lenet import LeNet

    return LeNet(classes, shape[0], shape[1])


def _mlp(shape: Shape, classes: int, hidden: int) -> nn.Module:
    from hebench.models.mlp import MLP

    return MLP(shape[0] * shape[1] * shape[2], classes, hidden)


def _resnet18(shape: Shape, classes: int, hidden: int) -> nn.Module:
    from hebench.models.resnet import ResNet18

    return ResNet18(classes, shape[0])


def _resnet50(shape: Shape, classes: int, hidden: int) -> nn.Module:
    from hebench.models.resnet import ResNet50

    return ResNet50(classes, shape[0])


def _vit_small(shape: Shape, classes: int, hidden: int) -> nn.Module:
    from hebench.models.vit import ViTSmall

    if shape[1] != shape[2]:
        raise ParameterError(f"vit_small needs square images, got {shape}", "use a dataset of square images")
    return ViTSmall(classes, shape[0], shape[1])


def _bert_base(shape: Shape, classes: int, hidden: int) -> nn.Module:
    from hebench.models.bert import BertEncoder

    if shape[:2] != (1, 1):
        raise ParameterError(f"bert_base reads token ids of shape (1, 1, length), got {shape}", "use data: tokens")
    return BertEncoder(classes, shape[2])


BUILDERS: dict[str, Callable[[Shape, int, int], nn.Module]] = {
    "cnn_dropout": _cnn_dropout,
    "lenet": _lenet,
    "mlp": _mlp,
    "resnet18": _resnet18,
    "resnet50": _resnet50,
    "vit_small": _vit_small,
    "bert_base": _bert_base,
}


def build_model(name: str, input_shape: Shape, num_classes: int, hidden: int = 16) -> nn.Module:
    """The model ``name`` for inputs of ``input_shape`` and ``num_classes`` classes (mlp: ``hidden`` units);
    ParameterError, before anything is allocated, for one that this machine's memory cannot train."""
    check_fits(name, hidden, count_parameters(name, input_shape, num_classes, hidden))
    return _builder(name)(tuple(input_shape), num_classes, hidden)  # type: ignore[arg-type]


def count_parameters(name: str, input_shape: Shape, num_classes: int, hidden: int = 16) -> int:
    """The parameter count of the model :func:`build_model` would build, from a skeleton on torch's meta device
    (shapes only: no memory, no initialisation cost)."""
    with torch.device("meta"):
        return parameter_count(_builder(name)(tuple(input_shape), num_classes, hidden))  # type: ignore[arg-type]


def _builder(name: str) -> Callable[[Shape, int, int], nn.Module]:
    try:
        return BUILDERS[name]
    except KeyError:
        raise ParameterError(f"unknown model '{name}'", f"choose one of {', '.join(BUILDERS)}") from None


def parameter_count(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())
