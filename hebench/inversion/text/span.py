"""The row span of a linear layer's observed gradient, and the distance of vectors to it (float64).

A linear layer ``y = x W`` fed inputs ``x_1..x_n`` has the weight gradient ``sum_i x_i dy_i^T``: every row of it,
seen in the input space, is a combination of the inputs. When ``n`` is below the input width and the ``dy_i`` are
independent, the rows span exactly ``span{x_i}``, and a candidate input lies in that span if and only if it is a
combination of the true inputs (for embeddings of distinct tokens: if and only if it is one of them). The span is
the row space of the observed matrix, cut where its spectrum drops: a float32 gradient's round-off sits some
five orders of magnitude below its smallest true singular value; quantisation (secagg, secret sharing) and HE
noise sit lower than the signal too, by less; DP noise at any useful level covers it.

Where no drop of ``min_gap`` exists, the protocol's bound on the inputs (DAGER reads the rank from it) still
separates signal from noise: the singular values past ``inputs`` are noise alone, the largest of them the noise
level, and the span is the directions standing ``bound_gap`` times above it (``rule`` "bound"). Noise only (DP at
a useful level) has none; an over-full bound (inputs at or above the rows' dimension) leaves no noise to measure
and the span empty.
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
    rule: str = ""  # what cut it: "gap" (a drop of min_gap), "bound" (above the noise past the bound), "" (none)

    @property
    def rank(self) -> int:
        return int(self.basis.shape[0])

    @property
    def gap(self) -> float:
        """The ratio of the last singular value kept to the first one cut (the largest found when none was kept);
        under the bound rule, to the noise level (the first value past the bound)."""
        return self.best_gap

    def diagnostics(self) -> dict[str, float | int]:
        s = self.singular
        return {
            "rank": self.rank,
            "ambient": self.ambient,
            "gap": self.gap,
            "rule": self.rule,
            "largest": float(s[0]) if len(s) else 0.0,
            "last_kept": float(s[self.rank - 1]) if self.rank else 0.0,
            "first_cut": float(s[self.rank]) if self.rank < len(s) else 0.0,
        }


def span_of(
    rows: torch.Tensor,
    min_gap: float,
    bound: int | None = None,
    floor: float = 1e-13,
    inputs: int | None = None,
    bound_gap: float = 0.0,
) -> Span:
    """The span of ``rows`` (n, m), cut at the spectrum's last drop, else at the noise level past the bound.

    The rank is the largest ``k`` up to ``bound`` (the inputs the protocol allows behind the update; None: any) where
    ``s_{k-1} / s_k >= min_gap``, singular values below ``floor`` x the largest being numerically zero (the signal's
    own spectrum can fall by more than the gap before it ends: an encoder's first position dominates it).
    Round-off sits below the gap. Where there is no such drop (quantisation or noise filling the spectrum, or a
    signal whose own spectrum falls smoothly) and ``bound_gap`` > 0: the bound rule (:func:`_above_noise`) with
    ``inputs`` (the most inputs that can reach the rows; default ``bound``). Neither: the span is empty."""
    matrix = rows.detach().to(torch.float64)
    _, s, vh = torch.linalg.svd(matrix, full_matrices=False)
    empty = Span(torch.zeros((0, matrix.shape[1]), dtype=torch.float64, device=matrix.device), s, matrix.shape[1])
    if len(s) == 0 or float(s[0]) == 0.0:
        return empty
    nonzero = int((s > floor * s[0]).sum())
    if nonzero < len(s):  # exactly low rank (to float64 precision): the gap is at the first zero
        return Span(vh[:nonzero].contiguous(), s, matrix.shape[1], float("inf"), "gap")
    top = len(s) - 1 if bound is None else min(len(s) - 1, bound)
    if top < 1:
        return replace(empty, best_gap=1.0)
    ratios = s[:top] / s[1 : top + 1]
    drops = torch.nonzero(ratios >= min_gap).flatten()
    if len(drops) == 0:
        above = _above_noise(s, vh, bound if inputs is None else inputs, bound_gap)
        return above if above is not None else replace(empty, best_gap=float(ratios.max()))
    k = int(drops[-1]) + 1  # the last drop: the signal's own spectrum may fall steeply before it ends
    return Span(vh[:k].contiguous(), s, matrix.shape[1], float(ratios[k - 1]), "gap")


def _above_noise(s: torch.Tensor, vh: torch.Tensor, inputs: int | None, bound_gap: float) -> Span | None:
    """The bound rule: at most ``inputs`` directions carry signal, so ``s[inputs]`` and below are noise; the span is
    the directions above ``bound_gap`` x that noise level (None: no bound, none left past it, or none above it).
    Each kept direction is tilted by the noise by about 1 / its ratio to the noise level, at most 1 / bound_gap:
    that ratio is the span's ``gap``, so tolerances widen with it."""
    if inputs is None or bound_gap <= 0 or inputs < 1 or inputs >= len(s):
        return None
    noise = float(s[inputs])
    k = int((s[:inputs] >= bound_gap * noise).sum())
    if k == 0 or noise == 0.0:
        return None
    return Span(vh[:k].contiguous(), s, vh.shape[1], float(s[k - 1]) / noise, "bound")


def distance(span: Span, vectors: torch.Tensor) -> torch.Tensor:
    """Relative distance of each vector (..., m) to the span: ``|v - P v| / |v|`` (float64)."""
    v = vectors.to(torch.float64)
    inside = (v @ span.basis.T) @ span.basis
    norm = v.norm(dim=-1).clamp_min(torch.finfo(torch.float64).tiny)
    return (v - inside).norm(dim=-1) / norm
