"""Ordering an encoder's tokens into sequences with the second layer's span (no causal mask: whole sequences).

Without a causal mask every position's second-layer input depends on the whole sequence, so sequences cannot be
grown left to right. The first layer gives, at each position, the few tokens the batch holds there; a sequence
is one choice per position, and the right choices put every position's second-layer input on the span. The
search fixes one token at the position with the most distinct tokens (one search per such token: each true
sequence holds one of them), starts the other positions at their first candidate, and sweeps the positions,
setting each to the candidate that minimises the sum of the logarithms of the sequence's span distances (a position
brought exactly onto the span counts for orders of magnitude), until a sweep changes nothing; a sequence whose every
position is within ``order_tol`` is kept, the closest first, at most as many as the protocol allows sequences.
All searches run batched. This is a
heuristic: DAGER's encoder search is exhaustive over small candidate sets, which the product of candidates
(up to batch^length) rules out beyond tiny batches.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from hebench.inversion.text.anatomy import Encoder
from hebench.inversion.text.span import Span, distance

if TYPE_CHECKING:
    from hebench.inversion.text.span_attack import SpanConfig

CHUNK = 512  # sequences per forward pass


@dataclass(frozen=True)
class Searched:
    sequences: list[tuple[list[int], list[float]]]
    diagnostics: dict[str, Any]


def _distances(anatomy: Encoder, span: Span, ids: torch.Tensor, coords: torch.Tensor | None) -> torch.Tensor:
    out = []
    for part in ids.split(CHUNK):
        z = anatomy.second_inputs(part).to(torch.float64)
        out.append(distance(span, z if coords is None else z @ coords.T))
    return torch.cat(out)


def search(
    anatomy: Encoder,
    span: Span,
    found: list[torch.Tensor],
    cfg: SpanConfig,
    bound: int,
    coords: torch.Tensor | None = None,
) -> Searched:
    """Sequences whose every position's second-layer input lies within ``cfg.order_tol`` of ``span``."""
    length = len(found)
    pivot = max(range(length), key=lambda p: len(found[p]))
    limit = cfg.encoder_starts or 4 * bound
    starts = found[pivot][:limit]
    state = torch.stack([f[0].expand(len(starts)) for f in found], dim=1).clone()  # (S, L)
    state[:, pivot] = starts
    m = None if coords is None else coords.to(torch.float64)
    evaluated, sweeps = 0, 0
    for sweep in range(1, cfg.encoder_sweeps + 1):
        sweeps = sweep
        changed = False
        for p in range(length):
            cands = found[p]
            if p == pivot or len(cands) < 2:
                continue
            trial = state.repeat_interleave(len(cands), dim=0)
            trial[:, p] = cands.repeat(len(state))
            cost = _distances(anatomy, span, trial, m).clamp_min(1e-12).log().sum(-1)
            cost = cost.reshape(len(state), len(cands))
            evaluated += len(trial)
            best = cands[cost.argmin(dim=1)]
            changed |= bool((best != state[:, p]).any())
            state[:, p] = best
        if not changed:
            break
    final = _distances(anatomy, span, state, m)
    evaluated += len(state)
    kept: dict[tuple[int, ...], list[float]] = {}
    for tokens, residual in zip(state.tolist(), final.tolist(), strict=True):
        if max(residual) < cfg.order_tol:
            kept.setdefault(tuple(tokens), residual)
    ranked = sorted(kept.items(), key=lambda item: max(item[1]))
    diagnostics = {
        "pivot": pivot,
        "starts": len(starts),
        "sweeps": sweeps,
        "evaluated": evaluated,
        "passed": len(ranked),
        "dropped_over_bound": max(0, len(ranked) - bound),
    }
    return Searched([(list(t), r) for t, r in ranked[:bound]], diagnostics)
