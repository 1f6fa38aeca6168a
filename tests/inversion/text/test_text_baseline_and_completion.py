"""The optimisation baseline on a trivially small case; low-rank completion of a partly hidden gradient."""

from __future__ import annotations

import pytest
import torch

import hebench.models.language  # noqa: F401  (hides a broken torchvision before transformers loads)
from hebench.inversion.scoring.text import score_reconstruction
from hebench.inversion.text.baseline import BaselineConfig, optimisation_attack
from hebench.inversion.text.completion import complete
from hebench.inversion.text.result import Why
from hebench.inversion.text.views import TextClient, TextTraining, encrypted_view, raw_view
from hebench.models.language.decoder import build_decoder, decoder_shape

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_optimisation_baseline_recovers_a_trivially_small_batch():
    # Arrange: one sequence of 4 tokens from a 64-token vocabulary, one gradient of the tiny decoder
    model = build_decoder(decoder_shape("gpt2_tiny"), 64, 0, seed=0)
    client = TextClient(torch.tensor([[37, 43, 12, 8]]))
    obs = raw_view(model, client, TextTraining(upload="gradient"))
    # Act
    result = optimisation_attack(obs, BaselineConfig(restarts=2, steps=60))
    # Assert: far above chance (1/64 per token)
    scores = score_reconstruction(client.blocks.tolist(), result)
    assert result.outcome == "recovered" and len(result.diagnostics["restart_losses"]) == 2
    assert scores.token_recall >= 0.5
    # an encrypted view gives it nothing to match
    sealed = optimisation_attack(encrypted_view(model, client, TextTraining(upload="gradient")))
    assert sealed.reason is Why.NOTHING_OBSERVED and not sealed.token_bag


def test_low_rank_completion_fills_randomly_hidden_entries():
    gen = torch.Generator().manual_seed(0)
    left = torch.randn(60, 5, generator=gen, dtype=torch.float64)
    truth = left @ torch.randn(5, 40, generator=gen, dtype=torch.float64)
    seen = torch.rand(truth.shape, generator=gen) > 0.2
    done = complete(torch.where(seen, truth, torch.zeros(())), seen, rank=5, iterations=2000, tol=1e-12)
    assert done.hidden == int((~seen).sum())
    assert float((done.matrix - truth).norm() / truth.norm()) < 1e-6
