"""A BERT-base-sized encoder (Devlin et al., 2019, BERT-base's published configuration), randomly initialised.

Vocabulary 30,522, hidden 768, 12 layers of 12 heads, intermediate 3,072 (GELU), 512 positions, 2 token
types, post-norm LayerNorm (eps 1e-12), a tanh pooler on the first token and a linear classifier: the
shape of ``bert-base-uncased`` with a sequence-classification head (109,482,240 parameters before the
classifier), initialised as BERT is (weights and embeddings N(0, 0.02²), biases 0, LayerNorm 1 and 0).
It reads token ids (a batch of shape ``(n, 1, 1, length)``, hebench's image-shaped tensors).
No pretrained weights can be downloaded here: runs with this model measure cost, not accuracy.
"""

from __future__ import annotations

import torch
from torch import nn

VOCAB, HIDDEN, LAYERS, HEADS, INTERMEDIATE, POSITIONS, TYPES = 30522, 768, 12, 12, 3072, 512, 2


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
    def __init__(self) -> None:
        super().__init__()
        self.word_embeddings = nn.Embedding(VOCAB, HIDDEN)
        self.position_embeddings = nn.Embedding(POSITIONS, HIDDEN)
        self.token_type_embeddings = nn.Embedding(TYPES, HIDDEN)
        self.LayerNorm = nn.LayerNorm(HIDDEN, eps=1e-12)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(ids.shape[1], device=ids.device)
        types = torch.zeros_like(ids)
        return self.LayerNorm(
            self.word_embeddings(ids) + self.position_embeddings(positions) + self.token_type_embeddings(types)
        )


class BertEncoder(nn.Module):
    def __init__(self, num_classes: int, length: int) -> None:
        super().__init__()
        if length > POSITIONS:
            raise ValueError(f"sequences of {length} tokens exceed BERT's {POSITIONS} positions")
        self.embeddings = Embeddings()
        layer = nn.TransformerEncoderLayer(
            HIDDEN, HEADS, INTERMEDIATE, dropout=0.1, activation="gelu", layer_norm_eps=1e-12, batch_first=True
        )
        self.encoder = nn.TransformerEncoder(layer, LAYERS, enable_nested_tensor=False)
        self.pooler = nn.Linear(HIDDEN, HIDDEN)
        self.classifier = nn.Linear(HIDDEN, num_classes)
        self.apply(_bert_init)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ids = x.reshape(len(x), -1).long()
        hidden = self.encoder(self.embeddings(ids))
        return self.classifier(torch.tanh(self.pooler(hidden[:, 0])))
