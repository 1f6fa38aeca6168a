from __future__ import annotations

import pytest
import torch

from hebench.config import DataSpec
from hebench.data.digits import load_digits_tensors
from hebench.data.registry import load_federated
from hebench.data.splits import partition
from hebench.errors import DatasetError


def test_digits_are_real_28x28_in_unit_range():
    x, y = load_digits_tensors()
    assert x.shape == (1797, 1, 28, 28) and y.shape == (1797,)
    assert float(x.min()) >= 0.0 and float(x.max()) <= 1.0 and set(y.tolist()) == set(range(10))


def test_iid_split_covers_every_sample_once():
    x, y = torch.arange(100).float().reshape(100, 1, 1, 1), torch.arange(100) % 10
    shards = partition(x, y, 4, split="iid", seed=1)
    seen = torch.cat([s.x.flatten() for s in shards]).sort().values
    assert torch.equal(seen, torch.arange(100).float()) and [len(s) for s in shards] == [25, 25, 25, 25]


def test_dirichlet_split_is_deterministic_and_skewed():
    x, y = load_digits_tensors()
    a = partition(x, y, 5, split="dirichlet", alpha=0.1, seed=3)
    b = partition(x, y, 5, split="dirichlet", alpha=0.1, seed=3)
    assert all(torch.equal(s.y, t.y) for s, t in zip(a, b, strict=True))
    dominant = [float(torch.bincount(s.y, minlength=10).max()) / len(s) for s in a]
    assert max(dominant) > 0.4  # alpha=0.1: clients are dominated by few labels
    assert sum(len(s) for s in a) == 1797


@pytest.mark.parametrize(
    ("clients", "kwargs", "message"),
    [(0, {}, ">= 1"), (1000, {}, "cannot give"), (3, {"split": "zipf"}, "unknown split")],
)
def test_impossible_splits_are_refused(clients, kwargs, message):
    x, y = load_digits_tensors()
    with pytest.raises(DatasetError) as info:
        partition(x, y, clients, **kwargs)
    assert message in str(info.value) or message in info.value.fix


def test_federated_digits_holds_out_a_test_split():
    data = load_federated(DataSpec(clients=3, test_fraction=0.25), seed=0)
    assert len(data.clients) == 3 and data.test_y.shape[0] == 449 and data.num_classes == 10
    assert sum(len(c) for c in data.clients) + 449 == 1797


def test_more_clients_than_pairs_of_samples_need_min_per_client_one():
    with pytest.raises(DatasetError) as info:
        load_federated(DataSpec(clients=1000), seed=0)
    assert "data.min_per_client: 1" in info.value.fix
    data = load_federated(DataSpec(clients=1000, min_per_client=1), seed=0)
    assert len(data.clients) == 1000 and min(len(c) for c in data.clients) == 1
    assert sum(len(c) for c in data.clients) == 1797 - data.test_y.shape[0]  # every training sample, once
