"""The next-token task the FedAvg client calls: the model a suite names, its counts, what its checkpoint and its
sensitivity map cover (the adapters, never the frozen base), and the decoders' positions the config checks."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from hebench.config import DECODER_POSITIONS, FullFineTuning, LoraFineTuning, ModelSpec
from hebench.errors import ParameterError
from hebench.fl.update import checkpoint_vector, load_vector, model_vector
from hebench.models.language.decoder import SHAPES
from hebench.models.shared import shared_tensors
from hebench.models.task import ModelInputs
from hebench.models.tasks import task_for
from hebench.protections.selective.masks import layer_mask, sensitivity_map

VOCAB, LENGTH = 320, 16
INPUTS = ModelInputs((LENGTH,), VOCAB, 0)
LORA = ModelSpec(name="gpt2_tiny", fine_tuning=LoraFineTuning(kind="lora", rank=4))


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _blocks(n: int = 6) -> torch.Tensor:
    starts = torch.randint(0, VOCAB - LENGTH, (n, 1), generator=torch.Generator().manual_seed(1))
    return starts + torch.arange(LENGTH)


def test_the_config_knows_each_decoders_positions():
    assert DECODER_POSITIONS == {name: shape.positions for name, shape in SHAPES.items()}


def test_a_decoder_trains_on_next_token_prediction_and_an_image_model_on_classification():
    assert task_for(LORA).name == "next-token" and task_for(LORA).metrics[0] == "perplexity"
    assert task_for(ModelSpec(name="mlp")).name == "classification"


def test_the_same_seed_builds_the_same_adapters_on_every_party():
    task = task_for(LORA)
    one, two, other = (task.build(LORA, INPUTS, seed) for seed in (3, 3, 4))
    assert np.array_equal(model_vector(one), model_vector(two))
    assert not np.array_equal(model_vector(one), model_vector(other))


def test_counts_give_the_update_size_without_building_and_vocab_size_pads_the_embeddings():
    task = task_for(LORA)
    counts, built = task.counts(LORA, INPUTS), task.build(LORA, INPUTS, 0)
    assert counts.shared == len(model_vector(built)) == 2 * 4 * (128 + 3 * 128)
    assert counts.total == sum(p.numel() for p in built.parameters())
    padded = ModelSpec(name="gpt2_small", vocab_size=50257, fine_tuning=FullFineTuning())
    assert task.counts(padded, ModelInputs((64,), 2048, 0)).total == 124_439_808  # GPT-2 small's published size
    with pytest.raises(ParameterError, match="smaller than the tokenizer"):
        task.counts(padded, ModelInputs((64,), 60_000, 0))


def test_evaluation_reports_perplexity_as_exp_of_the_held_out_loss():
    task = task_for(LORA)
    model = task.build(LORA, INPUTS, 0)
    metrics = task.evaluate(model, _blocks(), _blocks())
    assert metrics["perplexity"] == pytest.approx(math.exp(metrics["loss"]))
    assert 0.5 * VOCAB < metrics["perplexity"] < 2 * VOCAB  # an untrained model: about uniform


def test_a_lora_checkpoint_holds_the_adapters_only_and_loads_back():
    task = task_for(LORA)
    model = task.build(LORA, INPUTS, 0)
    with torch.no_grad():
        for _, p in shared_tensors(model):
            p.add_(0.01)
    checkpoint = checkpoint_vector(model)
    assert len(checkpoint) == len(model_vector(model)) == 2 * 4 * (128 + 3 * 128)  # never the frozen base
    fresh = task.build(LORA, INPUTS, 0)
    load_vector(fresh, checkpoint)
    assert np.array_equal(model_vector(fresh), model_vector(model))


def test_the_sensitivity_map_covers_the_adapters_and_lora_a_has_none_while_b_is_zero():
    """At initialisation B = 0, so the loss does not depend on A: A's gradient (and sensitivity) is exactly 0, and a
    sensitivity mask agreed then picks B's coordinates only."""
    task = task_for(LORA)
    model = task.build(LORA, INPUTS, 0)
    scores = sensitivity_map(model, _blocks(4), _blocks(4), task.sensitivity)
    assert len(scores) == len(model_vector(model))
    offset = 0
    for name, p in shared_tensors(model):
        part = scores[offset : offset + p.numel()]
        offset += p.numel()
        if "lora_A" in name:
            assert not part.any(), name
        else:
            assert part.max() > 0, name


def test_layer_masks_name_the_adapters_not_the_frozen_embeddings():
    model = task_for(LORA).build(LORA, INPUTS, 0)
    names = [n for n, _ in shared_tensors(model)]
    mask = layer_mask(model, ("first",))
    first = shared_tensors(model)[0][1].numel()
    assert "lora_A" in names[0] and mask[:first].all() and not mask[first:].any()
    assert layer_mask(model, ("*lora_B*",)).sum() == sum(p.numel() for n, p in shared_tensors(model) if "lora_B" in n)
