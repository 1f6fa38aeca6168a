"""A BERT-base-sized encoder (Devlin et al., 2019, BERT-base's published configuration), randomly initialised.

Vocabulary 30,522, hidden 768, 12 layers of 12 heads, intermediate 3,072 (GELU), 512 positions, 2 token
types, post-norm LayerNorm (eps 1e-12), a tanh pooler on the first token and a linear classifier: the
shape of ``bert-base-uncased`` with a sequence-classification head (109,482,240 parameters before the
classifier), initialised as BERT is (weights and embeddings N(0, 0.02²), biases 0, LayerNorm 1 and 0).
It reads token ids (a batch of shape ``(n, 1, 1, length)``, hebench's image-shaped tensors).
No pretrained weights can be downloaded here: runs with this model measure cost, not accuracy.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

VOCAB, HIDDEN, LAYERS, HEADS, INTERMEDIATE, POSITIONS, TYPES = 30522, 768, 12, 12, 3072, 512, 2


@dataclass(frozen=True)
class EncoderShape:
    """BERT-base's sizes by default; smaller ones for tests (the text-leakage attack's tiny encoder)."""

    vocab: int = VOCAB
    hidden: int = HIDDEN
    layers: int = LAYERS
    heads: int = HEADS
    intermediate: int = INTERMEDIATE
    positions: int = POSITIONS
    dropout: float = 0.1


BERT_BASE = EncoderShape()


INITIALIZER_RANGE = 0.02


@torch.no_grad()
def _bert_init(module: nn.Module) -> None:
    """BERT's initialisation (``initializer_range`` 0.02)."""
    if isinstance(module, (nn.Linear, nn.Embedding)):
        module.weight.normal_(0.0, INITIALIZER_RANGE)
    if isinstance(module, nn.Linear) and module.bias is not None:
        module.bias.zero_()
    if isinstance(module, nn.MultiheadAttention):
        module.in_proj_weight.normal_(0.0, INITIALIZER_RANGE)
        module.in_proj_bias.zero_()
    if isinstance(module, nn.LayerNorm):
        module.weight.fill_(1.0)
        module.bias.zero_()


class Embeddings(nn.Module):
    def __init__(self, shape: EncoderShape = BERT_BASE) -> None:
        super().__init__()
        self.word_embeddings = nn.Embedding(shape.vocab, shape.hidden)
        self.position_embeddings = nn.Embedding(shape.positions, shape.hidden)
        self.token_type_embeddings = nn.Embedding(TYPES, shape.hidden)
        self.LayerNorm = nn.LayerNorm(shape.hidden, eps=1e-12)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(ids.shape[1], device=ids.device)
        types = torch.zeros_like(ids)
        return self.LayerNorm(
            self.word_embeddings(ids) + self.position_embeddings(positions) + self.token_type_embeddings(types)
        )


class BertEncoder(nn.Module):
    def __init__(self, num_classes: int, length: int, shape: EncoderShape = BERT_BASE) -> None:
        super().__init__()
        if length > shape.positions:
            raise ValueError(f"sequences of {length} tokens exceed BERT's {shape.positions} positions")
        self.embeddings = Embeddings(shape)
        layer = nn.TransformerEncoderLayer(
            shape.hidden,
            shape.heads,
            shape.intermediate,
            dropout=shape.dropout,
            activation="gelu",
            layer_norm_eps=1e-12,
            batch_first=True,
        )
        self.encoder = nn.TransformerEncoder(layer, shape.layers, enable_nested_tensor=False)
        self.pooler = nn.Linear(shape.hidden, shape.hidden)
        self.classifier = nn.Linear(shape.hidden, num_classes)
        self.apply(_bert_init)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ids = x.reshape(len(x), -1).long()
        hidden = self.encoder(self.embeddings(ids))
        return self.classifier(torch.tanh(self.pooler(hidden[:, 0])))
