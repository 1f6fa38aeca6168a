"""The span attack's paths for decoders too large for its small-model routes (GPT-2 small): the pooled token
candidates, the last token read from the coordinates nearest the output, the decoder's dropout override."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from hebench.config import ModelSpec
from hebench.errors import ParameterError
from hebench.inversion.text.last_token import _nearest_output
from hebench.inversion.text.observation import TextObservation
from hebench.inversion.text.span_attack import _pooled


def test_candidates_stay_per_position_unless_a_position_has_more_than_its_cap():
    distances = torch.tensor([[0.0, 0.9, 0.9, 0.9], [0.9, 0.0, 0.9, 0.9]])  # (positions, vocabulary)
    found = [torch.tensor([0]), torch.tensor([1])]
    diag: dict = {}
    assert _pooled(distances, found, 1e-3, cap=2, bound=8, diag=diag) is found and "token_pool" not in diag


def test_a_capped_position_makes_every_position_try_the_batchs_pooled_tokens():
    # 3 tokens near the span at both positions (small position embeddings), cap 2: the true token may be cut
    distances = torch.tensor([[0.0, 1e-4, 2e-4, 0.9], [2e-4, 1e-4, 0.0, 0.9]])
    found = [torch.tensor([0, 1]), torch.tensor([1, 2])]
    diag: dict = {}
    pooled = _pooled(distances, found, 1e-3, cap=2, bound=8, diag=diag)
    assert [p.tolist() for p in pooled] == [[0, 1, 2], [0, 1, 2]] and diag["token_pool"] == 3


def _obs(sizes: dict[str, int], visible: dict[str, torch.Tensor] | None = None) -> TextObservation:
    update = {name: torch.ones(n) for name, n in sizes.items()}
    return TextObservation(nn.Linear(1, 1), update, length=4, visible=visible)


def test_the_last_token_reads_the_suffix_nearest_the_output_that_fits_and_at_least_the_last_tensor():
    order = ["wte", "h0", "h1", "ln_f"]
    obs = _obs({"wte": 1000, "h0": 100, "h1": 50, "ln_f": 10})
    assert _nearest_output(obs, order, per=1, budget=10_000) == (order, 1160)  # everything fits
    assert _nearest_output(obs, order, per=1, budget=200) == (["h0", "h1", "ln_f"], 160)  # stops before wte
    assert _nearest_output(obs, order, per=1, budget=5) == (["ln_f"], 10)  # the last tensor, over budget or not


def test_hidden_coordinates_do_not_count_against_the_budget():
    order = ["h0", "h1"]
    obs = _obs({"h0": 100, "h1": 100}, visible={"h0": torch.zeros(100, dtype=torch.bool)})
    assert _nearest_output(obs, order, per=1, budget=150) == (["h0", "h1"], 100)


def test_dropout_overrides_a_random_decoders_only():
    assert ModelSpec(name="gpt2_small", dropout=0.0).dropout == 0.0
    for bad in ({"name": "mlp", "dropout": 0.0}, {"name": "gpt2_tiny", "pretrained": True, "dropout": 0.0}):
        with pytest.raises((ValueError, ParameterError), match="dropout"):
            ModelSpec(**bad)
