"""The row span of a linear layer's observed gradient, and the distance of vectors to it (float64).

A linear layer ``y = x W`` fed inputs ``x_1..x_n`` has the weight gradient ``sum_i x_i dy_i^T``: every row of it,
seen in the input space, is a combination of the inputs. When ``n`` is below the input width and the ``dy_i`` are
independent, the rows span exactly ``span{x_i}``, and a candidate input lies in that span if and only if it is a
combination of the true inputs (for embeddings of distinct tokens: if and only if it is one of them). The span is
the row space of the observed matrix, cut where its spectrum drops: a float32 gradient's round-off sits some
five orders of magnitude below its smallest true singular value; quantisation (secagg, secret sharing) and HE
noise sit lower than the signal too, by less; DP noise at any useful level covers it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch


@dataclass(frozen=True)
class Span:
    basis: torch.Tensor  # (k, m) float64, orthonormal rows
    singular: torch.Tensor  # every singular value of the observed rows, descending (float64)
    ambient: int  # m: the dimension of the space the rows live in
    best_gap: float = float("inf")  # the largest ratio of consecutive singular values found (the cut's, when kept)

    @property
    def rank(self) -> int:
        return int(self.basis.shape[0])

    @property
    def gap(self) -> float:
        """The ratio of the last singular value kept to the first one cut (the largest found when none was kept)."""
        return self.best_gap

    def diagnostics(self) -> dict[str, float | int]:
        s = self.singular
        return {
            "rank": self.rank,
            "ambient": self.ambient,
            "gap": self.gap,
            "largest": float(s[0]) if len(s) else 0.0,
            "last_kept": float(s[self.rank - 1]) if self.rank else 0.0,
            "first_cut": float(s[self.rank]) if self.rank < len(s) else 0.0,
        }


def span_of(rows: torch.Tensor, min_gap: float, bound: int | None = None, floor: float = 1e-13) -> Span:
    """The span of ``rows`` (n, m), cut at the spectrum's last drop.

    The rank is the largest ``k`` up to ``bound`` (the inputs the protocol allows behind the update; None: any) where
    ``s_{k-1} / s_k >= min_gap``, singular values below ``floor`` x the largest being numerically zero (the signal's
    own spectrum can fall by more than the gap before it ends: an encoder's first position dominates it).
    Round-off, quantisation or noise in the observed gradient sit below the gap; a gap under ``min_gap`` means there
    is none to find (more inputs than the width, or noise as large as the signal): the span is then empty."""
    matrix = rows.detach().to(torch.float64)
    _, s, vh = torch.linalg.svd(matrix, full_matrices=False)
    empty = Span(torch.zeros((0, matrix.shape[1]), dtype=torch.float64, device=matrix.device), s, matrix.shape[1])
    if len(s) == 0 or float(s[0]) == 0.0:
        return empty
    nonzero = int((s > floor * s[0]).sum())
    if nonzero < len(s):  # exactly low rank (to float64 precision): the gap is at the first zero
        return Span(vh[:nonzero].contiguous(), s, matrix.shape[1], float("inf"))
    top = len(s) - 1 if bound is None else min(len(s) - 1, bound)
    if top < 1:
        return replace(empty, best_gap=1.0)
    ratios = s[:top] / s[1 : top + 1]
    drops = torch.nonzero(ratios >= min_gap).flatten()
    if len(drops) == 0:
        return replace(empty, best_gap=float(ratios.max()))
    k = int(drops[-1]) + 1  # the last drop: the signal's own spectrum may fall steeply before it ends
    return Span(vh[:k].contiguous(), s, matrix.shape[1], float(ratios[k - 1]))


def distance(span: Span, vectors: torch.Tensor) -> torch.Tensor:
    """Relative distance of each vector (..., m) to the span: ``|v - P v| / |v|`` (float64)."""
    v = vectors.to(torch.float64)
    inside = (v @ span.basis.T) @ span.basis
    norm = v.norm(dim=-1).clamp_min(torch.finfo(torch.float64).tiny)
    return (v - inside).norm(dim=-1) / norm
