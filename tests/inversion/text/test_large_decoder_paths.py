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


def test_the_shortlist_route_and_a_named_device_recover_what_the_gram_route_does(monkeypatch):
    # Arrange: 2 random sequences of 8 tokens, one gradient, on the tiny decoder (its whole update fits the Gram
    # route); then the Gram route made too small for it, and the attack asked to run on a device by name
    from hebench.inversion.text import last_token
    from hebench.inversion.text.span_attack import SpanConfig, span_attack
    from hebench.inversion.text.views import TextClient, TextTraining, raw_view
    from hebench.models.language.decoder import build_decoder, decoder_shape

    model = build_decoder(decoder_shape("gpt2_tiny"), 320, 0, seed=0)
    gen = torch.Generator().manual_seed(1)
    blocks = torch.stack([torch.randperm(320, generator=gen)[:2] for _ in range(8)], dim=1)
    obs = raw_view(model, TextClient(blocks), TextTraining(upload="gradient"))
    gram = span_attack(obs)
    monkeypatch.setattr(last_token, "JACOBIAN_BYTES", 1)
    # Act
    shortlist = span_attack(obs, SpanConfig(device="cpu:0"))
    # Assert: both read every sequence whole, the last token included; the model is back where it was
    assert gram.diagnostics["last_token_method"] == "gram"
    assert shortlist.diagnostics["last_token_method"] == "shortlist-64" and shortlist.diagnostics["device"] == "cpu:0"
    assert sorted(gram.token_lists) == sorted(shortlist.token_lists) == sorted(blocks.tolist())
    assert next(model.parameters()).device.type == "cpu"


def _linear_targets(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Per (sequence, token) logit gradients of a model linear in its targets, alike across sequences (final states
    with cosine ~0.8, as GPT-2 small's at random initialisation), and the update the true targets 0, 1, 2 give."""
    gen = torch.Generator().manual_seed(seed)
    common = torch.randn(3, 32, generator=gen, dtype=torch.float64)
    grads = torch.stack([common + 0.5 * torch.randn(3, 32, generator=gen, dtype=torch.float64) for _ in range(3)])
    return grads, grads[0, 0] + grads[1, 1] + grads[2, 2]  # grads[s, v]: sequence s with last token v


def test_the_swap_pass_undoes_a_cycle_of_last_tokens_that_single_changes_cannot():
    from hebench.inversion.text.last_token import _swap_pass

    grads, update = _linear_targets()

    def head_sum(chosen: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
        return sum((grads[int(s), int(chosen[s])] for s in rows), torch.zeros(32, dtype=torch.float64))

    def pair_change(rows: torch.Tensor, now: torch.Tensor, then: torch.Tensor) -> torch.Tensor:
        return sum((grads[int(s), int(a)] - grads[int(s), int(b)] for s, a, b in zip(rows, now, then, strict=True)))

    cycled = torch.tensor([1, 2, 0])
    worst = float((update - head_sum(cycled, torch.arange(3))).norm())
    for s in range(3):  # no single change helps: each makes a duplicate token
        for v in range(3):
            trial = cycled.clone()
            trial[s] = v
            if v != int(cycled[s]):
                assert float((update - head_sum(trial, torch.arange(3))).norm()) >= worst * 0.5
    assert _swap_pass(cycled, pair_change, update, head_sum) == 2
    assert cycled.tolist() == [0, 1, 2]
    assert _swap_pass(cycled, pair_change, update, head_sum) == 0  # the truth: nothing to exchange
