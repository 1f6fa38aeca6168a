"""Non-weight state: BatchNorm statistics and counters stay with each client; the update is the parameters."""

from __future__ import annotations

import numpy as np
import torch

from hebench.fl.update import checkpoint_vector, layer_sizes, load_vector, model_vector
from hebench.inversion.views.observation import SEES_LOCAL_STATE, parameter_masks
from hebench.models import build_model, parameter_count
from hebench.protections.selective.masks import layer_mask, magnitude_map, random_map


def _resnet() -> torch.nn.Module:
    torch.manual_seed(0)
    model = build_model("resnet18", (3, 32, 32), 10)
    model.train()
    model(torch.rand(4, 3, 32, 32))  # a forward pass in training mode moves the statistics and counters
    return model


def test_the_update_holds_the_parameters_and_no_buffer():
    model = _resnet()
    vector = model_vector(model)
    assert len(vector) == parameter_count(model) == sum(layer_sizes(model, "per-layer"))
    counters = [b for n, b in model.named_buffers() if n.endswith("num_batches_tracked")]
    assert counters and all(int(c) == 1 for c in counters)
    assert len(checkpoint_vector(model)) == len(vector) + sum(b.numel() for b in model.buffers())


def test_an_aggregate_replaces_the_parameters_and_keeps_this_clients_statistics():
    model = _resnet()
    stats = {n: b.clone() for n, b in model.named_buffers()}
    aggregate = np.random.default_rng(1).uniform(-0.1, 0.1, parameter_count(model)).astype(np.float32)
    load_vector(model, aggregate)
    np.testing.assert_array_equal(model_vector(model), aggregate)
    for name, buffer in model.named_buffers():
        assert torch.equal(buffer, stats[name]), name  # never averaged, never overwritten


def test_a_checkpoint_restores_parameters_and_statistics():
    model = _resnet()
    checkpoint = checkpoint_vector(model)
    fresh = build_model("resnet18", (3, 32, 32), 10)
    load_vector(fresh, checkpoint)  # the layout every hebench version wrote: old checkpoints resume
    for (name, a), (_, b) in zip(model.state_dict().items(), fresh.state_dict().items(), strict=True):
        assert torch.equal(a, b), name


def test_masks_and_attack_views_index_the_parameters_only():
    model = _resnet()
    n = parameter_count(model)
    assert len(magnitude_map(model)) == len(random_map(model, 0)) == len(layer_mask(model, ("first",))) == n
    masks = parameter_masks(model, np.ones(n, dtype=bool))
    assert [m.shape for m in masks] == [p.shape for p in model.parameters()]
    assert SEES_LOCAL_STATE is False  # the views are told: no BatchNorm statistics reach the aggregator
