"""Natural-image patches from scikit-learn's bundled photographs, and CIFAR read from its pickles."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import torch
import yaml

from hebench.config import DataSpec
from hebench.data.natural import load_natural_tensors
from hebench.data.registry import load_federated

CARD = Path(__file__).resolve().parents[2] / "datasets" / "natural.yaml"


def test_patches_are_32x32_rgb_textured_and_deterministic():
    x, y = load_natural_tensors()
    assert x.shape[1:] == (3, 32, 32) and len(x) == len(y) > 50
    assert float(x.min()) >= 0.0 and float(x.max()) <= 1.0
    assert float(x.flatten(1).std(1).min()) >= 0.05  # no flat patches
    x2, y2 = load_natural_tensors()
    assert torch.equal(x, x2) and torch.equal(y, y2)


def test_natural_is_a_suite_dataset():
    data = load_federated(DataSpec(dataset="natural", clients=2), seed=0)
    assert data.input_shape == (3, 32, 32) and data.num_classes == 100 and len(data.clients) == 2


def test_card_states_the_licence_of_the_photographs():
    card = yaml.safe_load(CARD.read_text())
    assert "CC BY 2.0" in card["license"] and {"china.jpg", "flower.jpg"} <= set(card["images"])


def test_cifar_is_read_from_its_pickles_without_torchvision(tmp_path):
    folder = tmp_path / "cifar-100-python"
    folder.mkdir()
    data = np.arange(4 * 3072, dtype=np.uint8).reshape(4, 3072) % 251
    (folder / "train").write_bytes(pickle.dumps({"data": data, "fine_labels": [3, 1, 4, 1]}))
    fed = load_federated(DataSpec(dataset="cifar100", clients=1, path=str(tmp_path), test_fraction=0.25), seed=0)
    assert fed.num_classes == 100 and fed.input_shape == (3, 32, 32) and len(fed.clients[0]) == 3
