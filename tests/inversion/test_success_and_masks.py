"""Success rates with Wilson intervals; masks from the sample, the client, or all clients."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from hebench.analysis.success import success_rate, wilson
from hebench.config import SelectiveSpec
from hebench.data.federated import ClientData
from hebench.data.natural import load_natural_tensors
from hebench.errors import ParameterError
from hebench.inversion.evaluate import init_model, summarize
from hebench.protections.selective.mask_source import selective_mask


def test_wilson_interval_contains_the_rate_and_narrows_with_n():
    low, high = wilson(5, 10)
    assert low < 0.5 < high and low == pytest.approx(1 - high)
    assert wilson(0, 10)[0] == 0.0 and 0 < wilson(0, 10)[1] < 0.5
    assert wilson(10, 10)[1] == 1.0 and wilson(10, 10)[0] > 0.5
    assert wilson(50, 100)[1] - wilson(50, 100)[0] < high - low
    assert wilson(0, 0) == (0.0, 1.0)


def test_success_rate_counts_images_at_or_above_the_threshold():
    s = success_rate([0.95, 0.1, 0.6, 0.59], threshold=0.6)
    assert (s["k"], s["n"], s["rate"]) == (2, 4, 0.5) and s["low"] < 0.5 < s["high"]


def test_summary_counts_every_image_of_every_batch():
    records = [{"ssim": 0.5, "ssim_per_image": [0.9, 0.1]}, {"ssim": 0.95, "ssim_per_image": [0.95]}]
    s = summarize(records, success_ssim=0.6)
    assert s["success"]["n"] == 3 and s["success"]["k"] == 2


def _clients() -> tuple[ClientData, ...]:
    x, y = load_natural_tensors()
    return tuple(ClientData(str(k), x[k * 20 : (k + 1) * 20], y[k * 20 : (k + 1) * 20]) for k in range(3))


def test_mask_sources_use_their_own_data():
    clients = _clients()
    model = init_model("lenet", (3, 32, 32), 100, seed=0)
    spec = SelectiveSpec(mask="sensitivity", ratio=0.1, samples=16)
    batch = (clients[0].x[:1], clients[0].y[:1])
    masks = {s: selective_mask(spec, model, s, batch, clients, 0) for s in ("sample", "local", "global")}
    n = sum(p.numel() for p in model.parameters())
    assert all(m.shape == (n,) and m.sum() == int(np.ceil(0.1 * n)) for m in masks.values())
    assert not np.array_equal(masks["sample"], masks["local"])
    assert not np.array_equal(masks["local"], masks["global"])
    assert np.array_equal(selective_mask(spec, model, "global", batch, clients[:1], 0), masks["local"])
    random = SelectiveSpec(mask="random", ratio=0.1)
    assert np.array_equal(
        selective_mask(random, model, "sample", batch, clients, 0),
        selective_mask(random, model, "global", batch, clients, 0),
    )
    with pytest.raises(ParameterError, match="mask source"):
        selective_mask(spec, model, "oracle", batch, clients, 0)


def test_sample_mask_hides_most_of_the_sample_gradient():
    clients = _clients()
    model = init_model("lenet", (3, 32, 32), 100, seed=0)
    x, y = clients[0].x[:1], clients[0].y[:1]
    mask = selective_mask(SelectiveSpec(mask="sensitivity", ratio=0.1), model, "sample", (x, y), clients, 0)
    loss = torch.nn.functional.cross_entropy(model(x), y)
    g = torch.cat([t.reshape(-1) for t in torch.autograd.grad(loss, list(model.parameters()))])
    energy = float((g[torch.as_tensor(mask)] ** 2).sum() / (g**2).sum())
    assert energy > 0.5  # the top 10 % by the sample's own sensitivity carry most of its gradient energy
