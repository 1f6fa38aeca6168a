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


@pytest.mark.slow  # builds ResNet-50, ViT-Small and BERT-base (109 M parameters)
def test_big_models_match_their_published_configurations():
    assert parameter_count(build_model("resnet50", (3, 32, 32), 1000)) == 25_557_032  # torchvision's resnet50
    assert parameter_count(build_model("vit_small", (3, 224, 224), 1000)) == 22_050_664  # timm's ViT-S/16
    bert = build_model("bert_base", (1, 1, 32), 2)
    assert parameter_count(bert) - parameter_count(bert.classifier) == 109_482_240  # bert-base-uncased + pooler


@pytest.mark.slow  # a training step of ResNet-50, ViT-Small and BERT-base
def test_big_models_train_on_small_inputs():
    from hebench.data.tokens import CLASSES, load_token_tensors

    vit = build_model("vit_small", (3, 32, 32), 10)
    assert vit(torch.zeros(2, 3, 32, 32)).shape == (2, 10)
    x, y = load_token_tensors(samples=8)
    assert x.shape == (8, 1, 1, 32) and int(y.max()) < CLASSES and bool((x[:, 0, 0, 0] == 101).all())
    bert = build_model("bert_base", tuple(x.shape[1:]), CLASSES)
    loss = torch.nn.functional.cross_entropy(bert(x), y)
    loss.backward()
    assert bert.embeddings.word_embeddings.weight.grad is not None
    with pytest.raises(ParameterError, match="token ids"):
        build_model("bert_base", (3, 32, 32), 10)
