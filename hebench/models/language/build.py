"""The language model a suite names: a GPT-2 decoder (pretrained tiny base, or randomly initialised), fine-tuned in
full or through LoRA adapters.

The same on every party for the same seed: the decoder's initialisation is seeded (``build_decoder``), the
pretrained base is read from its checksummed file, and LoRA's ``A`` matrices are drawn from torch's global
generator, which the caller seeds (``B`` starts at zero, so the adapted model starts equal to its base).
"""

from __future__ import annotations

import warnings

import torch
from torch import nn

from hebench.config import LoraFineTuning, ModelSpec
from hebench.errors import ParameterError
from hebench.models.language.decoder import build_decoder, decoder_shape
from hebench.models.language.lora import LoraSpec, attach_lora
from hebench.models.language.pretrained import load_pretrained_base, read_meta


def lora_spec(fine_tuning: LoraFineTuning) -> LoraSpec:
    return LoraSpec(fine_tuning.rank, fine_tuning.alpha, fine_tuning.dropout, tuple(fine_tuning.targets))


def base_decoder(spec: ModelSpec, vocab_size: int, end_of_text: int, seed: int) -> nn.Module:
    """The decoder before any adapter: the pretrained base (its vocabulary must be the data's), or a seeded one."""
    if spec.pretrained:
        meta = read_meta()
        if (meta["vocab_size"], meta["end_of_text"]) != (vocab_size, end_of_text):
            raise ParameterError(
                f"the pretrained base reads a {meta['vocab_size']}-entry vocabulary; the data was encoded with one of "
                f"{vocab_size}",
                "encode the text with the base's vocabulary (leave data.tokenizer out), or set model.pretrained: false",
            )
        return load_pretrained_base().model
    overrides = {} if spec.dropout is None else {"dropout": spec.dropout}
    return build_decoder(decoder_shape(spec.name, **overrides), vocab_size, end_of_text, seed)


def build_language_model(spec: ModelSpec, vocab_size: int, end_of_text: int, seed: int) -> nn.Module:
    """``spec``'s decoder, with LoRA adapters where its fine-tuning says (seed torch's generator for their ``A``)."""
    model = base_decoder(spec, vocab_size, end_of_text, seed)
    if isinstance(spec.fine_tuning, LoraFineTuning):
        with warnings.catch_warnings():  # peft asks transformers a deprecated question on every wrap
            warnings.simplefilter("ignore", FutureWarning)
            model = attach_lora(model, lora_spec(spec.fine_tuning))
    model.train()
    return model


def count_language_parameters(spec: ModelSpec, vocab_size: int, end_of_text: int) -> tuple[int, int]:
    """(every parameter, the trainable ones) of :func:`build_language_model`'s model, counted on torch's meta
    device (shapes only: a GPT-2 small costs nothing to count)."""
    meta_spec = spec.model_copy(update={"pretrained": False})  # same shapes; no weights to read
    with torch.device("meta"):
        model = build_language_model(meta_spec, vocab_size, end_of_text, seed=0)
    total = sum(p.numel() for p in model.parameters())
    return total, sum(p.numel() for p in model.parameters() if p.requires_grad)
