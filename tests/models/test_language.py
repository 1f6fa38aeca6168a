"""The GPT-2-architecture decoder, LoRA adapters as the update, next-token loss (tiny model; GPT-2 small on 'meta')."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
import torch

from hebench.errors import ParameterError
from hebench.models.language.adapter_update import adapter_update, load_adapter, update_size
from hebench.models.language.decoder import build_decoder, decoder_config, decoder_shape
from hebench.models.language.local_steps import train_steps
from hebench.models.language.lora import LoraSpec, attach_lora
from hebench.models.language.next_token import next_token_loss, perplexity
from hebench.models.shared import shared_tensors

VOCAB = 320


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _tiny(seed: int = 0):
    return build_decoder(decoder_shape("gpt2_tiny"), VOCAB, 0, seed=seed)


def _blocks(n: int = 8, length: int = 16, seed: int = 0) -> torch.Tensor:
    """Token blocks with structure to learn: each block counts up from a random start."""
    starts = torch.randint(0, VOCAB - length, (n, 1), generator=torch.Generator().manual_seed(seed))
    return starts + torch.arange(length)


def test_gpt2_small_has_gpt2s_published_size_and_lora_r8_is_a_fraction_of_a_percent():
    from transformers import GPT2LMHeadModel

    with torch.device("meta"):  # the shapes only: no weights are allocated
        model = GPT2LMHeadModel(decoder_config(decoder_shape("gpt2_small")))
        total = sum(p.numel() for p in model.parameters())
        lora = attach_lora(model, LoraSpec(rank=8))
    assert total == 124_439_808  # GPT-2 small (tied embeddings)
    assert update_size(lora) == 12 * 8 * (768 + 3 * 768) == 294_912  # A: 768x8, B: 8x2304 per layer
    assert sum(p.numel() for p in lora.parameters()) == total + 294_912


def test_lora_update_holds_the_adapters_only():
    model = attach_lora(_tiny(), LoraSpec(rank=4, targets=("c_attn", "attn.c_proj")))
    names = [name for name, _ in adapter_update(model)]
    assert len(names) == 2 * 2 * 2  # 2 layers x (c_attn, attn.c_proj) x (lora_A, lora_B)
    assert all(".lora_A." in n or ".lora_B." in n for n in names)
    assert not any("mlp" in n for n in names)  # attn.c_proj, not the MLP's c_proj
    assert names == [n for n, _ in shared_tensors(model)]
    assert update_size(model) == 2 * (4 * (128 + 384) + 4 * (128 + 128))
    base = {n for n, p in model.named_parameters() if not p.requires_grad}
    assert base and not base & set(names)  # the frozen base never travels


def test_full_fine_tuning_sends_every_parameter_once():
    model = _tiny()
    update = adapter_update(model)
    assert update_size(model) == sum(p.numel() for p in model.parameters())  # tied embeddings counted once
    assert [n for n, _ in update] == [n for n, _ in model.named_parameters()]


def test_loading_an_aggregated_adapter_changes_the_adapter_only():
    model = attach_lora(_tiny(), LoraSpec(rank=4))
    base_before = {n: p.detach().clone() for n, p in model.named_parameters() if not p.requires_grad}
    blocks = _blocks()
    out_before = model(input_ids=blocks).logits.detach()
    aggregated = [(n, torch.full_like(t, 0.01)) for n, t in adapter_update(model)]
    load_adapter(model, aggregated)
    assert all(torch.equal(p, base_before[n]) for n, p in model.named_parameters() if not p.requires_grad)
    assert all(torch.equal(t, v) for (_, t), (_, v) in zip(adapter_update(model), aggregated, strict=True))
    assert not torch.allclose(model(input_ids=blocks).logits, out_before)
    with pytest.raises(ParameterError, match="do not match"):
        load_adapter(model, aggregated[1:])
    with pytest.raises(ParameterError, match="shape"):
        load_adapter(model, [(n, t[..., :1]) for n, t in aggregated])


def test_a_fresh_adapter_leaves_the_model_unchanged_and_trains_only_itself():
    base = _tiny()
    blocks = _blocks()
    reference = base(input_ids=blocks).logits.detach()
    frozen = [(p, p.detach().clone()) for p in base.parameters()]  # peft renames them; the tensors stay
    model = attach_lora(base, LoraSpec(rank=4))
    assert torch.allclose(model(input_ids=blocks).logits, reference)  # B = 0 at the start
    train_steps(model, blocks, steps=3, batch_size=4, lr=0.1)
    assert all(not p.requires_grad and torch.equal(p, before) for p, before in frozen)
    assert any(not torch.equal(t, torch.zeros_like(t)) for n, t in adapter_update(model) if "lora_B" in n)


def test_local_steps_lower_the_next_token_loss_and_perplexity_is_its_exp():
    model = _tiny(seed=1)
    blocks = _blocks(16)
    before = next_token_loss(model, blocks)
    losses = train_steps(model, blocks, steps=10, batch_size=8, lr=3e-3, optimiser_name="adamw", seed=2)
    assert next_token_loss(model, blocks) < before and len(losses) == 10
    assert perplexity(model, blocks) == pytest.approx(torch.tensor(next_token_loss(model, blocks)).exp().item())


def test_the_same_seed_builds_the_same_model():
    a, b = _tiny(seed=5), _tiny(seed=5)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters(), strict=True))
    assert not torch.equal(next(_tiny(seed=6).parameters()), next(a.parameters()))


def test_bad_shapes_and_adapters_are_refused():
    with pytest.raises(ParameterError, match="unknown decoder"):
        decoder_shape("gpt5")
    with pytest.raises(ParameterError, match="multiple"):
        decoder_config(decoder_shape("gpt2_tiny", heads=3))
    with pytest.raises(ParameterError, match="no layer"):
        attach_lora(_tiny(), LoraSpec(targets=("q_proj",)))
    with pytest.raises(ParameterError, match="rank"):
        attach_lora(_tiny(), LoraSpec(rank=0))


BROKEN_TORCHVISION = """
import sys
sys.path.insert(0, {fake!r})
from hebench.models.language import TORCHVISION_HIDDEN
from hebench.models.language.decoder import build_decoder, decoder_shape
from hebench.models.language.lora import attach_lora
model = attach_lora(build_decoder(decoder_shape("gpt2_tiny"), 300, 0))
print(TORCHVISION_HIDDEN)
"""


def test_an_installed_torchvision_that_cannot_import_does_not_break_transformers_or_peft(tmp_path):
    fake = tmp_path / "site"
    (fake / "torchvision").mkdir(parents=True)
    (fake / "torchvision" / "__init__.py").write_text(
        "raise RuntimeError('operator torchvision::nms does not exist')\n"
    )
    code = textwrap.dedent(BROKEN_TORCHVISION.format(fake=str(fake)))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "torchvision::nms does not exist" in done.stdout
