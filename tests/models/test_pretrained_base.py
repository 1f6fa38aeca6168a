"""The shipped tiny base: pretrained on public Shakespeare, checksummed, and a starting point that fine-tunes."""

from __future__ import annotations

import math
import shutil

import pytest

from hebench.data.shakespeare import load_shakespeare_roles
from hebench.data.text_blocks import tokenise_clients
from hebench.errors import DatasetError
from hebench.models.language.decoder import build_decoder
from hebench.models.language.local_steps import train_steps
from hebench.models.language.lora import LoraSpec, attach_lora
from hebench.models.language.next_token import next_token_loss, perplexity
from hebench.models.language.pretrained import META, TINY_BASE, WEIGHTS, load_pretrained_base

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def base():
    return load_pretrained_base()


@pytest.fixture(scope="module")
def client(base):
    """One sample client's text in the base's vocabulary."""
    roles = load_shakespeare_roles(sample=True, clients=1, seed=0)
    return tokenise_clients("shakespeare", roles, base.tokenizer, base.meta["block_tokens"]).clients[0]


def test_the_base_states_how_it_was_made(base):
    meta = base.meta
    assert meta["model"] == "gpt2_tiny" and meta["vocab_size"] == base.tokenizer.vocab_size
    assert meta["text"]["sha256"] == "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed"
    assert meta["parameters"] == sum(p.numel() for p in base.model.parameters())
    assert meta["loss"]["public_heldout"] < meta["loss"]["untrained_uniform"]
    assert "tools/pretrain_tiny_base.py" in meta["command"] and meta["seconds"]["cpu"] > 0


def test_pretraining_helps_on_text_the_base_never_saw(base, client):
    """A sample client's held-out speeches: the base predicts them far better than the same model untrained."""
    meta = base.meta
    untrained = build_decoder(_shape(meta), meta["vocab_size"], meta["end_of_text"], seed=1)
    assert perplexity(base.model, client.test) < 0.25 * perplexity(untrained, client.test)
    assert perplexity(base.model, client.test) == pytest.approx(
        math.exp(next_token_loss(base.model, client.test)), rel=1e-6
    )


def test_a_few_lora_steps_from_the_base_lower_perplexity_on_the_clients_text(client):
    model = attach_lora(load_pretrained_base().model, LoraSpec(rank=8))
    before = perplexity(model, client.train)
    train_steps(model, client.train, steps=8, batch_size=8, lr=2e-3, optimiser_name="adamw", seed=0)
    assert perplexity(model, client.train) < before


def test_a_changed_weights_file_is_refused(tmp_path):
    copy = tmp_path / "base"
    shutil.copytree(TINY_BASE, copy)
    data = bytearray((copy / WEIGHTS).read_bytes())
    data[-1] ^= 1
    (copy / WEIGHTS).write_bytes(bytes(data))
    with pytest.raises(DatasetError, match="does not match its SHA-256"):
        load_pretrained_base(copy)
    (copy / META).unlink()
    with pytest.raises(DatasetError, match="no pretrained base"):
        load_pretrained_base(copy)


def _shape(meta: dict):
    from hebench.models.language.decoder import DecoderShape

    return DecoderShape(**meta["shape"])
