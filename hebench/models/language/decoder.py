"""A GPT-2-architecture decoder (transformers' ``GPT2LMHeadModel``), at GPT-2 small's published configuration
or at a tiny one, randomly initialised.

``gpt2_small``: 12 layers of 12 heads, width 768, 1,024 positions, GELU, LayerNorm eps 1e-5, dropout 0.1,
tied input and output embeddings: with GPT-2's 50,257-token vocabulary, 124,439,808 parameters, the shape
of OpenAI's ``gpt2`` checkpoint (Radford et al., 2019). No weights can be downloaded here: a model built
from this configuration is randomly initialised (N(0, 0.02²), GPT-2's scheme); runs with it measure
cost, and any accuracy or perplexity they show is that of an untrained model.
``gpt2_tiny``: 2 layers of 4 heads, width 128, 128 positions, no dropout: for tests and the quickstart
(trains on 2 cores in minutes); :mod:`.pretrained` ships one pretrained on public Shakespeare.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import torch

from hebench.errors import ParameterError

if TYPE_CHECKING:
    from transformers import GPT2Config, GPT2LMHeadModel

GPT2_VOCAB, GPT2_END_OF_TEXT = 50257, 50256


@dataclass(frozen=True)
class DecoderShape:
    layers: int
    heads: int
    width: int
    positions: int
    dropout: float


SHAPES: dict[str, DecoderShape] = {
    "gpt2_small": DecoderShape(layers=12, heads=12, width=768, positions=1024, dropout=0.1),
    "gpt2_tiny": DecoderShape(layers=2, heads=4, width=128, positions=128, dropout=0.0),
}


def decoder_shape(name: str, **overrides: object) -> DecoderShape:
    """A named shape, with fields overridden (``dropout=0.0``, ``positions=256``...)."""
    try:
        shape = SHAPES[name]
    except KeyError:
        raise ParameterError(f"unknown decoder '{name}'", f"choose one of {', '.join(SHAPES)}") from None
    return replace(shape, **overrides)  # type: ignore[arg-type]


def decoder_config(
    shape: DecoderShape, vocab_size: int = GPT2_VOCAB, end_of_text: int = GPT2_END_OF_TEXT
) -> GPT2Config:
    """transformers' ``GPT2Config`` for ``shape`` and a vocabulary (``end_of_text`` its ``<|endoftext|>`` id)."""
    from transformers import GPT2Config

    if shape.width % shape.heads:
        raise ParameterError(f"width {shape.width} is not a multiple of {shape.heads} heads", "change width or heads")
    if not 0 <= end_of_text < vocab_size:
        raise ParameterError(
            f"<|endoftext|> id {end_of_text} is outside a vocabulary of {vocab_size}", "check the tokenizer"
        )
    return GPT2Config(
        vocab_size=vocab_size,
        n_positions=shape.positions,
        n_embd=shape.width,
        n_layer=shape.layers,
        n_head=shape.heads,
        resid_pdrop=shape.dropout,
        embd_pdrop=shape.dropout,
        attn_pdrop=shape.dropout,
        bos_token_id=end_of_text,
        eos_token_id=end_of_text,
        tie_word_embeddings=True,
    )


def build_decoder(
    shape: DecoderShape, vocab_size: int = GPT2_VOCAB, end_of_text: int = GPT2_END_OF_TEXT, seed: int = 0
) -> GPT2LMHeadModel:
    """A randomly initialised ``GPT2LMHeadModel`` (seeded; the global RNG is left as it was)."""
    from transformers import GPT2LMHeadModel

    config = decoder_config(shape, vocab_size, end_of_text)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return GPT2LMHeadModel(config)
