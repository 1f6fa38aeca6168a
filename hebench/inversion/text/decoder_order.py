"""Ordering a decoder's tokens into sequences with the second block's span (DAGER's greedy growth).

Causal attention makes the second block's input at position ``p`` a function of tokens ``0..p`` only. Start from
the first layer's tokens at position 0, each a one-token prefix; at every next position, extend every kept prefix
by every token the first layer found there, compute the second block's input at the new position (block 0 run
incrementally: each prefix keeps its keys and values), and keep the extensions within ``tol`` of the second
block's span. A wrong token or a wrong prefix moves that input off the span; the right ones stay on it.
At most ``keep`` prefixes survive a position (the closest): a cap on the work, reported when it bites.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from hebench.inversion.text.anatomy import Decoder
from hebench.inversion.text.span import Span, distance


@dataclass(frozen=True)
class Growth:
    tokens: torch.Tensor  # (n, p) the prefixes that survived every position so far
    residuals: torch.Tensor  # (n, p) their second-layer distances
    reached: int  # positions grown (p)
    capped: int  # positions where more than ``keep`` extensions passed
    tried: int  # (prefix, token) pairs evaluated


def grow(
    anatomy: Decoder,
    span: Span,
    candidates: list[torch.Tensor],
    tol: float,
    keep: int,
    coords: torch.Tensor | None = None,
) -> Growth:
    """Grow prefixes position by position through ``candidates`` (the first layer's tokens at each position)."""
    dev = span.basis.device
    heads = anatomy.heads
    width = anatomy.net.wte.weight.shape[1]
    dh = width // heads
    dtype = anatomy.net.wte.weight.dtype
    keys = torch.zeros((1, heads, 0, dh), dtype=dtype, device=dev)
    values = torch.zeros_like(keys)
    tokens = torch.zeros((1, 0), dtype=torch.long, device=dev)
    residuals = torch.zeros((1, 0), dtype=torch.float64, device=dev)
    capped = tried = 0
    m = None if coords is None else coords.to(dev, torch.float64)
    for position, cands in enumerate(candidates):
        if len(cands) == 0 or len(tokens) == 0:
            return Growth(tokens, residuals, position, capped, tried)
        cands = cands.to(dev)
        inputs, k, v = anatomy.step(keys, values, cands, position)  # (n, T, d), (T, h, dh)
        z = inputs.to(torch.float64)
        dist = distance(span, z if m is None else z @ m.T)  # (n, T)
        tried += dist.numel()
        passed = (dist < tol).nonzero()
        if len(passed) > keep:
            capped += 1
            order = dist[passed[:, 0], passed[:, 1]].argsort()[:keep]
            passed = passed[order]
        i, j = passed[:, 0], passed[:, 1]
        tokens = torch.cat([tokens[i], cands[j].unsqueeze(1)], dim=1)
        residuals = torch.cat([residuals[i], dist[i, j].unsqueeze(1)], dim=1)
        keys = torch.cat([keys[i], k[j].unsqueeze(2)], dim=2)
        values = torch.cat([values[i], v[j].unsqueeze(2)], dim=2)
    return Growth(tokens, residuals, len(candidates), capped, tried)
