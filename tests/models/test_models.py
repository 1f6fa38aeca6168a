from __future__ import annotations

import pytest
import torch

from hebench.errors import ParameterError
from hebench.models import build_model, parameter_count


def test_cnn_dropout_has_fednic_parameter_count():
    assert parameter_count(build_model("cnn_dropout", (1, 28, 28), 62)) == 1_206_590


def test_resnet18_matches_torchvision_count():
    assert parameter_count(build_model("resnet18", (3, 32, 32), 1000)) == 11_689_512


@pytest.mark.parametrize(
    "name,shape",
    [
        ("lenet", (1, 28, 28)),
        ("lenet", (3, 32, 32)),
        ("mlp", (1, 28, 28)),
        ("resnet18", (3, 32, 32)),
        ("cnn_dropout", (1, 28, 28)),
    ],
)
def test_models_produce_logits(name, shape):
    model = build_model(name, shape, 10).eval()
    assert model(torch.zeros(2, *shape)).shape == (2, 10)


def test_dlg_lenet_uses_sigmoid():
    model = build_model("lenet", (3, 32, 32), 10)
    assert any(isinstance(m, torch.nn.Sigmoid) for m in model.modules())


def test_unknown_model_and_wrong_shape():
    with pytest.raises(ParameterError, match="unknown model"):
        build_model("vit", (1, 28, 28), 10)
    with pytest.raises(ParameterError, match="28x28"):
        build_model("cnn_dropout", (3, 32, 32), 10)
