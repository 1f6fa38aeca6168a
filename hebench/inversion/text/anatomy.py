"""Where the span attack looks in a model: the first two attention input projections and what feeds them.

Two families are read:

- **decoder**: a GPT-2-architecture ``GPT2LMHeadModel`` (:mod:`hebench.models.language.decoder`), plain or
  wrapped in ``peft`` LoRA adapters. Block ``l``'s ``attn.c_attn`` (a ``Conv1D``, weight stored ``(in, out)``) reads
  ``ln_1`` of the residual stream; block 0's is ``ln_1(wte[t] + wpe[p])``.
- **encoder**: hebench's BERT (:mod:`hebench.models.bert`, post-norm): layer ``l``'s ``self_attn.in_proj_weight``
  (``(out, in)``) reads the layer's input; layer 0's is the embeddings' ``LayerNorm(word[t] + position[p] + type[0])``.

A :class:`Site` names the tensors of one projection in the update: the weight itself (full fine-tuning) or the
adapter's ``lora_A`` / ``lora_B`` (LoRA: ``W + s B A``), with the adapter's ``A`` as the model holds it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch
from torch import nn

from hebench.errors import ParameterError

Family = Literal["decoder", "encoder"]


@dataclass(frozen=True)
class FirstInputs:
    """The first attention layer's input for token ``t`` at position ``p``: ``norm(tokens[t] + positions[p])``."""

    tokens: torch.Tensor  # (V, d)
    positions: torch.Tensor  # (P, d): position embeddings (plus the token-type embedding, BERT)
    weight: torch.Tensor  # (d,) the LayerNorm's scale
    bias: torch.Tensor  # (d,)
    eps: float

    def at(self, tokens: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """The inputs of ``tokens`` at ``positions`` (broadcast), as the model computes them."""
        h = self.tokens[tokens] + self.positions[positions]
        return nn.functional.layer_norm(h, (h.shape[-1],), self.weight, self.bias, self.eps)


@dataclass(frozen=True)
class Site:
    """One attention input projection, as the update names its tensors."""

    layer: int
    width: int  # input features
    span_dim: int  # the most dimensions its inputs can span: a LayerNorm without shift feeds a (width - 1)-dim one
    weight: str | None  # the projection's weight (full fine-tuning); None when it is frozen
    transposed: bool  # stored (in, out) (GPT-2's Conv1D): the input-space rows are the columns
    lora_a: str | None = None  # adapter A (r, in)
    lora_b: str | None = None  # adapter B (out, r)
    adapter: torch.Tensor | None = None  # the model's A (r, in): an input's coordinates in the adapter's space

    @property
    def rank(self) -> int | None:
        return None if self.adapter is None else int(self.adapter.shape[0])


def _names(model: nn.Module) -> dict[int, str]:
    return {id(p): name for name, p in model.named_parameters()}


def _site(
    model: nn.Module, module: nn.Module, layer: int, weight_attr: str, transposed: bool, norm: nn.LayerNorm
) -> Site:
    """The site of ``module`` (a projection, or a peft ``lora.Linear`` wrapping one) in ``model``'s update, fed by
    ``norm``: its outputs ``g * n + b`` have ``n`` centred, so with ``b = 0`` they span ``width - 1`` dimensions."""
    names = _names(model)
    base = getattr(module, "base_layer", module)
    weight = getattr(base, weight_attr)
    width = int(weight.shape[0] if transposed else weight.shape[1])
    shifted = norm.bias is not None and bool(norm.bias.detach().abs().max() > 0)
    span_dim = width if shifted else width - 1
    lora_a, lora_b = getattr(module, "lora_A", None), getattr(module, "lora_B", None)
    if lora_a is not None and len(lora_a) > 0:
        if len(lora_a) != 1:
            raise ParameterError("the span attack reads one LoRA adapter per layer", "attach a single adapter")
        key = next(iter(lora_a.keys()))
        a, b = lora_a[key].weight, lora_b[key].weight
        return Site(
            layer,
            width,
            span_dim,
            names[id(weight)] if weight.requires_grad else None,
            transposed,
            names[id(a)],
            names[id(b)],
            a.detach().clone(),
        )
    return Site(layer, width, span_dim, names[id(weight)], transposed)


class Decoder:
    """A GPT-2-architecture decoder (plain or LoRA-wrapped)."""

    family: Family = "decoder"

    def __init__(self, model: nn.Module) -> None:
        self.model = model
        inner = model.get_base_model() if hasattr(model, "get_base_model") else model
        self.net = inner.transformer
        self.config = inner.config
        blocks = self.net.h
        if len(blocks) < 2:
            raise ParameterError("the span attack orders tokens with the second block", "use at least 2 layers")
        self.first = _site(model, blocks[0].attn.c_attn, 0, "weight", True, blocks[0].ln_1)
        self.second = _site(model, blocks[1].attn.c_attn, 1, "weight", True, blocks[1].ln_1)
        self.heads = int(self.config.n_head)

    def inputs(self) -> FirstInputs:
        ln = self.net.h[0].ln_1
        return FirstInputs(
            self.net.wte.weight.detach(), self.net.wpe.weight.detach(), ln.weight.detach(), ln.bias.detach(), ln.eps
        )

    @property
    def positions(self) -> int:
        return int(self.net.wpe.weight.shape[0])

    def dropout(self) -> float:
        return max(float(self.config.embd_pdrop), float(self.config.resid_pdrop), float(self.config.attn_pdrop))

    @torch.no_grad()
    def step(
        self, keys: torch.Tensor, values: torch.Tensor, tokens: torch.Tensor, position: int
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Block 0 on one more token for every (prefix, candidate) pair.

        ``keys``/``values``: (n, heads, p, dh), block 0's cache of n prefixes of ``position`` tokens; ``tokens``:
        (T,) candidates at ``position``. Returns the second block's ``c_attn`` input at the new position, (n, T, d),
        and the candidates' own key and value, (T, heads, dh) each."""
        block, nxt = self.net.h[0], self.net.h[1]
        attn = block.attn
        x = self.net.wte.weight[tokens] + self.net.wpe.weight[position]  # (T, d)
        q, k, v = attn.c_attn(block.ln_1(x)).split(attn.split_size, dim=-1)
        dh = q.shape[-1] // self.heads
        q, k, v = (t.reshape(len(tokens), self.heads, dh) for t in (q, k, v))
        scale = dh**-0.5 if self.config.scale_attn_weights else 1.0
        prior = torch.einsum("thd,nhpd->nthp", q, keys) * scale  # (n, T, heads, p)
        own = (q * k).sum(-1) * scale  # (T, heads)
        n = keys.shape[0]
        scores = torch.cat([prior, own.expand(n, -1, -1).unsqueeze(-1)], dim=-1)
        weights = scores.softmax(dim=-1)
        mixed = torch.einsum("nthp,nhpd->nthd", weights[..., :-1], values) + weights[..., -1:] * v  # (n, T, h, dh)
        h = x + attn.c_proj(mixed.reshape(n, len(tokens), -1))
        h = h + block.mlp(block.ln_2(h))
        return nxt.ln_1(h), k, v

    @torch.no_grad()
    def second_inputs(self, ids: torch.Tensor) -> torch.Tensor:
        """The second block's ``c_attn`` input at every position of full sequences ``ids`` (n, L), by the model's
        own forward pass (the reference :meth:`step` is checked against)."""
        out = self.net(input_ids=ids, output_hidden_states=True)
        return self.net.h[1].ln_1(out.hidden_states[1])


class Encoder:
    """hebench's BERT encoder (post-norm ``nn.TransformerEncoderLayer`` layers)."""

    family: Family = "encoder"

    def __init__(self, model: nn.Module) -> None:
        self.model = model
        layers = model.encoder.layers
        if len(layers) < 2:
            raise ParameterError("the span attack orders tokens with the second layer", "use at least 2 layers")
        self.first = _site(model, layers[0].self_attn, 0, "in_proj_weight", False, model.embeddings.LayerNorm)
        self.second = _site(model, layers[1].self_attn, 1, "in_proj_weight", False, layers[0].norm2)

    def inputs(self) -> FirstInputs:
        e = self.model.embeddings
        positions = e.position_embeddings.weight.detach() + e.token_type_embeddings.weight.detach()[0]
        ln = e.LayerNorm
        return FirstInputs(e.word_embeddings.weight.detach(), positions, ln.weight.detach(), ln.bias.detach(), ln.eps)

    @property
    def positions(self) -> int:
        return int(self.model.embeddings.position_embeddings.weight.shape[0])

    def dropout(self) -> float:
        return max((m.p for m in self.model.encoder.layers[0].modules() if isinstance(m, nn.Dropout)), default=0.0)

    @torch.no_grad()
    def second_inputs(self, ids: torch.Tensor) -> torch.Tensor:
        """Layer 1's input (layer 0's output) at every position of full sequences ``ids`` (n, L), dropout off."""
        layer = self.model.encoder.layers[0]
        was = layer.training
        layer.eval()
        try:
            return layer(self.model.embeddings(ids))
        finally:
            layer.train(was)


Anatomy = Decoder | Encoder


def anatomy_of(model: nn.Module) -> Anatomy:
    """The attack's reading of ``model``: a GPT-2-architecture decoder (plain or LoRA) or hebench's BERT encoder."""
    inner = model.get_base_model() if hasattr(model, "get_base_model") else model
    if hasattr(inner, "transformer") and hasattr(inner.transformer, "wte"):
        return Decoder(model)
    if hasattr(inner, "embeddings") and hasattr(inner, "encoder") and hasattr(inner.encoder, "layers"):
        if inner is not model:
            raise ParameterError("LoRA on hebench's BERT is not read by the span attack", "attack the plain encoder")
        return Encoder(model)
    raise ParameterError(
        f"the span attack reads GPT-2-architecture decoders and hebench's BERT, not {type(inner).__name__}",
        "attack a model built by hebench.models.language.decoder or hebench.models.bert",
    )
