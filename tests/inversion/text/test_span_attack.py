"""The exact span attack on the tiny decoder and a tiny encoder: the token set and the sequences of a small batch,
graceful failure (typed, with the reason) where its assumptions break, and nothing read that the view does not hold."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

import hebench.models.language  # noqa: F401  (hides a broken torchvision before transformers loads)
from hebench.inversion.text.anatomy import Decoder, anatomy_of
from hebench.inversion.text.observation import TextObservation
from hebench.inversion.text.result import Why
from hebench.inversion.text.span import distance, span_of
from hebench.inversion.text.span_attack import span_attack
from hebench.inversion.text.views import (
    TextClient,
    TextTraining,
    dp_view,
    encrypted_view,
    raw_view,
    selective_view,
    shares_view,
)
from hebench.inversion.text.vocabulary import token_distances
from hebench.models.language.decoder import build_decoder, decoder_shape
from hebench.models.language.lora import LoraSpec, attach_lora
from hebench.protections.dp.spec import DPSpec

VOCAB, WIDTH = 512, 128  # gpt2_tiny: width 128
GRADIENT = TextTraining(upload="gradient")


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _decoder(seed: int = 0):
    return build_decoder(decoder_shape("gpt2_tiny"), VOCAB, 0, seed=seed)


def _client(batch: int, length: int, seed: int = 1) -> TextClient:
    """Random token blocks with no token repeated at any one position (repeats add legitimate extra candidates)."""
    gen = torch.Generator().manual_seed(seed)
    blocks = torch.stack([torch.randperm(VOCAB, generator=gen)[:batch] for _ in range(length)], dim=1)
    return TextClient(blocks)


def test_span_check_recovers_the_exact_token_set_and_the_sequences_of_a_small_batch():
    # Arrange: one gradient of 3 sequences of 12 tokens on the tiny decoder (3 x 11 inputs reach it, width 128)
    model, client = _decoder(), _client(3, 12)
    # Act
    result = span_attack(raw_view(model, client, GRADIENT))
    # Assert: at every position whose input reaches the gradient (all but the last), exactly the batch's tokens
    truth = client.blocks
    assert [set(p) for p in result.tokens_by_position] == [set(truth[:, p].tolist()) for p in range(11)]
    assert result.outcome == "recovered" and result.reason is None
    assert sorted(result.token_lists) == sorted(truth.tolist())  # the last token read from the loss's linearity
    assert result.diagnostics["first"]["rank"] == 3 * 11
    assert all(s.worst < 1e-3 for s in result.sequences)


def test_attack_fails_gracefully_and_says_why_when_batch_x_length_exceeds_the_width():
    # Arrange: 10 sequences of 16 tokens: 10 x 15 = 150 inputs reach a 128-wide first layer
    model, client = _decoder(), _client(10, 16)
    # Act
    result = span_attack(raw_view(model, client, GRADIENT))
    # Assert: a typed failure that names the cause and the numbers, nothing recovered
    assert result.outcome == "failed" and result.reason is Why.SPAN_FULL
    assert "width 128" in result.why and "160 inputs" in result.why  # 127 dimensions: ln_1 has no shift yet
    assert result.sequences == () and result.tokens_by_position == ()
    # control: 8 sequences (8 x 15 = 120 < 128) on the same model are recovered
    assert span_attack(raw_view(model, _client(8, 16), GRADIENT)).outcome == "recovered"


def test_lora_gradient_spans_the_inputs_only_below_the_adapter_rank():
    # Arrange: LoRA's B = 0 at initialisation, so dL/dA = 0 and the attack reads dL/dB through A
    client = _client(1, 12)
    wide = attach_lora(_decoder(), LoraSpec(rank=32))  # 11 inputs < r = 32
    narrow = attach_lora(_decoder(), LoraSpec(rank=8))  # 11 inputs > r = 8
    # Act
    wide_result = span_attack(raw_view(wide, client, GRADIENT))
    narrow_result = span_attack(raw_view(narrow, client, GRADIENT))
    # Assert
    assert wide_result.diagnostics["first"]["source"] == "lora_B"
    assert wide_result.outcome == "recovered" and wide_result.token_lists == client.blocks.tolist()
    assert narrow_result.outcome == "failed" and narrow_result.reason is Why.ADAPTER_RANK
    assert "r = 8" in narrow_result.why


def test_a_sparse_noise_reading_of_loras_a_does_not_hide_the_span_that_b_carries():
    # Arrange: dL/dA = 0 at initialisation; DP noise below float32's rounding moves only some of A's coordinates,
    # a reading of exact low rank with an infinite gap, but more dimensions than the 11 inputs behind the update
    client = _client(1, 12)
    obs = raw_view(attach_lora(_decoder(), LoraSpec(rank=32)), client, GRADIENT)
    assert obs.update is not None
    gen = torch.Generator().manual_seed(3)
    update = dict(obs.update)
    for name, value in update.items():
        if "lora_A" in name:
            sparse = torch.zeros_like(value)
            sparse[:20, :40] = 1e-8 * torch.randn(20, 40, generator=gen)  # rank 20 of r = 32, above 11
            update[name] = sparse
    # Act
    result = span_attack(replace(obs, update=update))
    # Assert: both layers read from B, and every token comes back in order
    assert result.diagnostics["first"]["source"] == result.diagnostics["second"]["source"] == "lora_B"
    assert result.outcome == "recovered" and result.token_lists == client.blocks.tolist()


def test_lora_update_of_several_local_steps_still_spans_the_frozen_first_layer_inputs():
    # the base is frozen, so the first layer's inputs never move: the spans stay exact over steps (the last token,
    # read by linearity at the starting weights, is only approximate after several steps, so it is not checked)
    model = attach_lora(_decoder(), LoraSpec(rank=64))
    client = _client(2, 12)
    result = span_attack(raw_view(model, client, TextTraining(steps=3, batch_size=1, lr=0.01)))
    assert result.outcome == "recovered"
    assert sorted(s[:-1] for s in result.token_lists) == sorted(b[:-1] for b in client.blocks.tolist())


def test_attack_reads_only_what_the_view_holds():
    model, client = _decoder(), _client(2, 12)
    # an honest aggregator under full HE holds no update: nothing to attack, nothing recovered
    sealed = span_attack(encrypted_view(model, client, GRADIENT))
    assert sealed.outcome == "failed" and sealed.reason is Why.NOTHING_OBSERVED and not sealed.token_bag
    # fewer share holders than all: uniform words, no update
    assert span_attack(shares_view(model, client, GRADIENT, holders=1)).reason is Why.NOTHING_OBSERVED
    # the first attention projection encrypted, every other coordinate in the clear: the attack does not run
    first = anatomy_of(model).first.weight
    mask = {n: torch.full_like(p, n == first, dtype=torch.bool) for n, p in model.named_parameters()}
    hidden = span_attack(selective_view(model, client, GRADIENT, mask, "first-layer"))
    assert hidden.outcome == "failed" and hidden.reason is Why.LAYER_NOT_OBSERVED and not hidden.token_bag


def test_hidden_coordinates_never_enter_the_attack():
    # Arrange: a random 3 % of the update encrypted; the same view with garbage written where it is hidden
    model, client = _decoder(), _client(2, 12)
    gen = torch.Generator().manual_seed(5)
    mask = {n: torch.rand(p.shape, generator=gen) < 0.03 for n, p in model.named_parameters()}
    obs = selective_view(model, client, GRADIENT, mask, "random-3")
    assert obs.update is not None and obs.visible is not None
    garbage = {n: torch.where(obs.visible[n], t, torch.full_like(t, 1e6)) for n, t in obs.update.items()}
    poisoned = TextObservation(**{**obs.__dict__, "update": garbage})
    # Act
    clean, dirty = span_attack(obs), span_attack(poisoned)
    # Assert: the same tokens either way; the attack still recovers the batch from the seen coordinates
    assert clean.tokens_by_position == dirty.tokens_by_position
    assert clean.token_lists == dirty.token_lists
    assert sorted(clean.token_lists) == sorted(client.blocks.tolist())


def test_client_level_dp_noise_leaves_no_span_to_test():
    model, client = _decoder(), _client(2, 12)
    spec = DPSpec(level="client", clip=1.0, noise_multiplier=0.1)
    result = span_attack(dp_view(model, client, TextTraining(lr=0.01), spec))
    assert result.outcome == "failed" and result.reason is Why.SPAN_FULL
    assert "no drop in its spectrum" in result.why


def test_vocabulary_test_equals_the_direct_distance_of_every_token_at_every_position():
    model = _decoder()
    anatomy = anatomy_of(model)
    gen = torch.Generator().manual_seed(0)
    span = span_of(torch.randn(40, WIDTH, generator=gen), min_gap=10.0)  # a random 40-dimensional span
    inputs = anatomy.inputs()
    fast = token_distances(inputs, span, 6, chunk=100)
    direct = distance(span, inputs.at(torch.arange(VOCAB)[None, :], torch.arange(6)[:, None]))
    assert torch.allclose(fast, direct, atol=1e-9)


def test_incremental_first_block_equals_the_models_own_forward_pass():
    model = _decoder()
    anatomy = anatomy_of(model)
    assert isinstance(anatomy, Decoder)
    ids = _client(3, 5).blocks
    heads, dh = anatomy.heads, WIDTH // anatomy.heads
    keys = torch.zeros((1, heads, 0, dh))
    values = torch.zeros_like(keys)
    for p in range(5):  # grow the first sequence one token at a time
        inputs, k, v = anatomy.step(keys, values, ids[:1, p], p)
        keys, values = torch.cat([keys, k.unsqueeze(2)], 2), torch.cat([values, v.unsqueeze(2)], 2)
        reference = anatomy.second_inputs(ids[:1, : p + 1])[0, p]
        assert torch.allclose(inputs[0, 0], reference, atol=1e-5)


def test_encoder_sequence_recovered_without_a_causal_mask():
    from hebench.models.bert import BertEncoder, EncoderShape

    shape = EncoderShape(vocab=400, hidden=128, layers=3, heads=4, intermediate=256, positions=32, dropout=0.0)
    torch.manual_seed(0)
    model = BertEncoder(2, 12, shape)
    gen = torch.Generator().manual_seed(1)
    client = TextClient(torch.randint(0, 400, (1, 12), generator=gen), torch.tensor([1]))
    result = span_attack(raw_view(model, client, GRADIENT))
    assert result.diagnostics["family"] == "encoder"
    assert result.outcome == "recovered" and result.token_lists == client.blocks.tolist()


@pytest.mark.slow  # a Jacobian's Gram per sequence on the full 683,520-value update: ~10 s of CPU
def test_every_token_of_two_verses_is_read_back_from_the_pretrained_base_including_the_last():
    # the last token is a target only: on a pretrained base the inner product alone picks a confident wrong token,
    # the least-squares choice picks the right one
    from hebench.models.language.pretrained import load_pretrained_base

    base = load_pretrained_base()
    verses = ["To be, or not to be: that is the question", "Now is the winter of our discontent made glorious"]
    ids = [base.tokenizer.encode(v)[:10] for v in verses]
    client = TextClient(torch.tensor(ids))
    result = span_attack(raw_view(base.model, client, GRADIENT))
    assert result.outcome == "recovered"
    assert sorted(result.token_lists) == sorted(ids)
    assert sorted(base.tokenizer.decode(s) for s in result.token_lists) == sorted(base.tokenizer.decode(s) for s in ids)
