"""The span's bound rule: where quantisation or noise leaves no 10x drop in the spectrum, the directions standing
well above the noise past the protocol's bound on the inputs are the span; noise alone, or more inputs than the
width or the adapter's rank, still give nothing (typed)."""

from __future__ import annotations

import pytest
import torch

import hebench.models.language  # noqa: F401  (hides a broken torchvision before transformers loads)
from hebench.inversion.text.observation import TextObservation
from hebench.inversion.text.result import Why
from hebench.inversion.text.span import distance, span_of
from hebench.inversion.text.span_attack import SpanConfig, span_attack
from hebench.inversion.text.views import TextClient, TextTraining, shares_view
from hebench.models.language.decoder import build_decoder, decoder_shape
from hebench.models.language.lora import LoraSpec, attach_lora

VOCAB, WIDTH = 512, 128  # gpt2_tiny: width 128
WEIGHTS = TextTraining(lr=0.01)  # weights uploaded, read back through the learning rate: quantisation shows

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _decoder():
    return build_decoder(decoder_shape("gpt2_tiny"), VOCAB, 0, seed=0)


def _client(batch: int, length: int, seed: int = 1) -> TextClient:
    gen = torch.Generator().manual_seed(seed)
    return TextClient(torch.stack([torch.randperm(VOCAB, generator=gen)[:batch] for _ in range(length)], dim=1))


def _rows(signal: torch.Tensor, inputs: torch.Tensor, noise: float, seed: int = 0) -> torch.Tensor:
    """384 rows in the span of ``inputs`` (k, m) with singular values ``signal``, plus i.i.d. noise of std ``noise``."""
    gen = torch.Generator().manual_seed(seed)
    left = torch.linalg.qr(torch.randn(384, len(signal), generator=gen, dtype=torch.float64))[0]
    basis = torch.linalg.qr(inputs.T)[0].T  # orthonormal rows spanning the inputs
    return left @ torch.diag(signal) @ basis + noise * torch.randn(
        384, inputs.shape[1], generator=gen, dtype=torch.float64
    )


def test_rows_with_noise_below_the_signal_but_no_10x_drop_are_cut_at_the_noise_past_the_bound():
    # Arrange: 20 inputs in 128 dimensions, the spectrum falling smoothly to 7x the noise's largest singular value
    gen = torch.Generator().manual_seed(3)
    inputs = torch.randn(20, WIDTH, generator=gen, dtype=torch.float64)
    signal = torch.logspace(0, -2, 20, dtype=torch.float64)
    noise = 1e-2 / 7 / (384**0.5 + WIDTH**0.5)  # the noise's top singular value ~ std x (sqrt n + sqrt m)
    rows = _rows(signal, inputs, noise)
    # Act
    gap_only = span_of(rows, min_gap=10.0, bound=24)
    span = span_of(rows, min_gap=10.0, bound=24, inputs=24, bound_gap=5.0)
    # Assert: no 10x drop, so the gap rule finds nothing; the bound rule keeps exactly the signal's 20 directions
    assert gap_only.rank == 0 and gap_only.gap < 10.0
    assert span.rule == "bound" and span.rank == 20 and 5.0 <= span.gap < 10.0
    assert span.diagnostics()["rule"] == "bound"
    assert float(distance(span, inputs).max()) < 1.0 / span.gap  # the inputs are within the widened tolerance
    outside = torch.randn(200, WIDTH, generator=gen, dtype=torch.float64)
    assert float(distance(span, outside).min()) > 0.5  # other vectors are not
    # an over-full bound leaves no noise past it to measure: nothing is cut
    assert span_of(rows, min_gap=10.0, bound=WIDTH, inputs=WIDTH, bound_gap=5.0).rank == 0


def test_a_quantised_share_holders_view_is_recovered_under_the_bound_rule_and_not_by_the_gap_alone():
    # Arrange: all 3 share holders rebuild the victim's uploaded weights to fixed-point precision; 2 x 11 inputs
    model, client = _decoder(), _client(2, 12)
    obs = shares_view(model, client, WEIGHTS, holders=3)
    # Act
    bound = span_attack(obs)
    gap_only = span_attack(obs, SpanConfig(bound_gap=0.0))
    # Assert: the quantisation leaves the second layer no 10x drop: the gap rule gives tokens by position only,
    # the bound rule the sequences themselves, every token exact, and says which rule cut each span
    assert gap_only.outcome == "partial" and gap_only.reason is Why.ORDER_UNAVAILABLE
    assert bound.outcome == "recovered" and bound.reason is None
    assert sorted(bound.token_lists) == sorted(client.blocks.tolist())
    assert bound.diagnostics["second"]["rule"] == "bound" and bound.diagnostics["first"]["rule"] in ("gap", "bound")


def test_more_inputs_than_the_width_or_the_rank_still_fail_typed_on_a_quantised_view():
    # 10 x 15 = 150 inputs against width 128; 11 inputs against a LoRA rank of 8: the bound is over-full
    wide = span_attack(shares_view(_decoder(), _client(10, 16), WEIGHTS, holders=3))
    assert wide.outcome == "failed" and wide.reason is Why.SPAN_FULL and not wide.token_bag
    narrow_model = attach_lora(_decoder(), LoraSpec(rank=8))
    narrow = span_attack(shares_view(narrow_model, _client(1, 12), WEIGHTS, holders=3))
    assert narrow.outcome == "failed" and narrow.reason is Why.ADAPTER_RANK and not narrow.token_bag


@pytest.mark.parametrize(("batch", "length"), [(1, 12), (4, 16), (8, 16)])
def test_pure_noise_rows_give_no_tokens(batch, length):
    # Arrange: an "update" of Gaussian noise alone, under bounds from 11 inputs to 120 of the 128 dimensions
    model = _decoder()
    gen = torch.Generator().manual_seed(batch)
    update = {n: torch.randn(p.shape, generator=gen) for n, p in model.named_parameters()}
    obs = TextObservation(model, update, length, batch_size=batch, view="noise")
    # Act
    result = span_attack(obs)
    # Assert: nothing claimed, no token read, and a typed reason
    assert result.outcome == "failed" and result.reason in (Why.SPAN_FULL, Why.NO_TOKENS)
    assert not result.token_bag and not any(result.tokens_by_position) and result.sequences == ()
