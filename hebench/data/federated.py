"""The shared shape of every dataset hebench trains on: per-client tensors and a test set.

Images: ``x`` holds ``(n, channels, height, width)`` floats and ``y`` their labels. Text: ``x`` holds ``(n, L)``
token blocks and ``y`` is the same tensor (a causal language model's targets are its inputs, one position on:
Hugging Face's ``labels = input_ids`` convention), ``num_classes`` is the vocabulary's size and ``tokenizer``
the vocabulary the blocks were encoded with.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from hebench.data.bpe import TextTokenizer


@dataclass(frozen=True)
class ClientData:
    client_id: str
    x: torch.Tensor  # (n, channels, height, width), float32 in [0, 1]; text: (n, L) int64 token blocks
    y: torch.Tensor  # (n,), int64; text: x itself (the targets are the next tokens)

    def __len__(self) -> int:
        return int(self.y.shape[0])


@dataclass(frozen=True)
class FederatedData:
    name: str
    clients: tuple[ClientData, ...]
    test_x: torch.Tensor
    test_y: torch.Tensor
    num_classes: int  # text: the vocabulary's size
    tokenizer: TextTokenizer | None = None  # text: the vocabulary (the run folder keeps its files)

    @property
    def input_shape(self) -> tuple[int, ...]:
        return tuple(self.test_x.shape[1:])

    @property
    def end_of_text(self) -> int | None:
        """Text: the vocabulary's ``<|endoftext|>`` id (None: not text)."""
        return None if self.tokenizer is None else self.tokenizer.end_of_text

    def summary(self) -> dict[str, object]:
        out: dict[str, object] = {
            "dataset": self.name,
            "clients": len(self.clients),
            "samples_per_client": [len(c) for c in self.clients],
            "test_samples": int(self.test_y.shape[0]),
            "num_classes": self.num_classes,
            "input_shape": list(self.input_shape),
        }
        if self.tokenizer is not None:  # samples are blocks of input_shape[0] tokens
            out.update(client_ids=[c.client_id for c in self.clients], vocab_size=self.num_classes)
        return out
