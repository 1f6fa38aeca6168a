"""ViT-Small (Dosovitskiy et al., 2021; the DeiT-S / ViT-S/16 configuration), randomly initialised.

Embedding 384, depth 12, 6 heads, MLP ratio 4, a class token and learned position embeddings, pre-norm
blocks (LayerNorm eps 1e-6), as timm's ``vit_small_patch16_224`` (22,050,664 parameters for 1,000
classes at 224x224), initialised as timm does (linear weights N(0, 0.02²) truncated at ±2σ, biases 0,
position embeddings and class token N(0, 0.02²)). Small inputs use 4x4 patches (a 32x32 image: 64
tokens), 224x224 and larger the published 16x16. No pretrained weights can be downloaded here: runs
with this model measure cost, not accuracy.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from hebench.errors import ParameterError

DIM, DEPTH, HEADS, MLP_RATIO = 384, 12, 6, 4


class Attention(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, d = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        out = F.scaled_dot_product_attention(q, k, v)
        return self.proj(out.transpose(1, 2).reshape(b, n, d))


class Block(nn.Module):
    def __init__(self, dim: int, heads: int, mlp_ratio: int) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=1e-6)
        self.attn = Attention(dim, heads)
        self.norm2 = nn.LayerNorm(dim, eps=1e-6)
        self.mlp = nn.Sequential(nn.Linear(dim, dim * mlp_ratio), nn.GELU(), nn.Linear(dim * mlp_ratio, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class ViTSmall(nn.Module):
    def __init__(self, num_classes: int, in_channels: int, image: int) -> None:
        super().__init__()
        patch = 16 if image >= 128 else 4
        if image % patch:
            raise ParameterError(
                f"vit_small needs a side divisible by {patch}, got {image}", "use 28x28 or 32x32 inputs"
            )
        tokens = (image // patch) ** 2
        self.patch_embed = nn.Conv2d(in_channels, DIM, patch, patch)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, DIM))
        self.pos_embed = nn.Parameter(torch.randn(1, tokens + 1, DIM) * 0.02)  # timm: trunc_normal(std=.02)
        self.blocks = nn.Sequential(*(Block(DIM, HEADS, MLP_RATIO) for _ in range(DEPTH)))
        self.norm = nn.LayerNorm(DIM, eps=1e-6)
        self.head = nn.Linear(DIM, num_classes)
        with torch.no_grad():
            nn.init.normal_(self.cls_token, std=0.02)
            for module in self.modules():
                if isinstance(module, nn.Linear):
                    nn.init.trunc_normal_(module.weight, std=0.02, a=-0.04, b=0.04)
                    nn.init.zeros_(module.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.patch_embed(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls_token.expand(len(x), -1, -1), x], dim=1) + self.pos_embed
        return self.head(self.norm(self.blocks(x))[:, 0])
