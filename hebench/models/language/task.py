"""Next-token prediction: the GPT-2 decoders' task on text blocks (``x`` the blocks; ``y`` the same blocks).

Training loss is the mean next-token cross-entropy of a batch of blocks; evaluation reports the held-out
next-token loss and its perplexity (``exp`` of the mean loss over every target token). The sensitivity map
(selective encryption) takes each block's gradient in turn over the trainable parameters only (a LoRA
model's frozen base has none), as a loop: transformers' GPT-2 is not written for ``torch.func.vmap``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from hebench.config import ModelSpec
from hebench.errors import ParameterError
from hebench.models.language.next_token import block_loss, next_token_loss
from hebench.models.task import ModelInputs, ParameterCounts


def vocabulary(spec: ModelSpec, inputs: ModelInputs) -> tuple[int, int]:
    """(embedding rows, <|endoftext|> id): the tokenizer's vocabulary, or ``model.vocab_size`` rows covering it."""
    if inputs.end_of_text is None:
        raise ParameterError("a language model needs text encoded by a tokenizer", "use data.dataset: shakespeare")
    if spec.vocab_size is not None and spec.vocab_size < inputs.num_classes:
        raise ParameterError(
            f"model.vocab_size={spec.vocab_size} is smaller than the tokenizer's {inputs.num_classes} entries",
            f"raise model.vocab_size to at least {inputs.num_classes}, or leave it out",
        )
    return spec.vocab_size or inputs.num_classes, inputs.end_of_text


@dataclass(frozen=True)
class NextTokenTask:
    name: str = "next-token"
    metrics: tuple[str, ...] = ("perplexity", "loss")

    def build(self, spec: ModelSpec, inputs: ModelInputs, seed: int) -> nn.Module:
        from hebench.models.language.build import build_language_model

        torch.manual_seed(seed)  # LoRA's A matrices
        return build_language_model(spec, *vocabulary(spec, inputs), seed)

    def counts(self, spec: ModelSpec, inputs: ModelInputs) -> ParameterCounts:
        from hebench.models.language.build import count_language_parameters

        return ParameterCounts(*count_language_parameters(spec, *vocabulary(spec, inputs)))

    def loss(self, model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return block_loss(model, x)

    def evaluate(self, model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> dict[str, float]:
        loss = next_token_loss(model, x)
        return {"perplexity": math.exp(loss), "loss": loss}

    def sensitivity(self, model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> dict[str, torch.Tensor]:
        names = [n for n, p in model.named_parameters() if p.requires_grad]
        params = [p for _, p in model.named_parameters() if p.requires_grad]
        total = [torch.zeros_like(p) for p in params]
        was_training = model.training
        model.eval()
        for block in x:
            grads = torch.autograd.grad(block_loss(model, block.unsqueeze(0)), params)
            for acc, g in zip(total, grads, strict=True):
                acc += g.detach().abs()
        model.train(was_training)
        return {n: t / max(len(x), 1) for n, t in zip(names, total, strict=True)}


NEXT_TOKEN = NextTokenTask()
