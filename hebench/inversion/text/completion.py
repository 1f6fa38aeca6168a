"""Low-rank completion of a partly seen gradient: what a mask-aware adversary does with selective encryption.

A first-layer weight gradient ``sum_i x_i dy_i^T`` has rank at most the number of inputs behind it (batch x
length), far below its size. Selective encryption hides some coordinates; the adversary knows which (the mask
is agreed in the clear) and fills them by hard impute (Mazumder, Hastie and Tibshirani, 2010, hard-thresholded
variant): fill the hidden entries with zeros, then repeatedly replace them by the best rank-``k`` approximation's,
keeping the seen ones, until the hidden entries stop moving. ``k`` is the protocol's bound on the inputs
(public: batch, steps, block length), capped below the matrix's smaller side. Float64 throughout.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Completion:
    matrix: torch.Tensor  # float64, the rank-k approximant (equal to the seen entries once converged)
    rank: int
    iterations: int
    change: float  # relative change of the hidden entries at the last iteration
    converged: bool
    hidden: int  # entries filled

    def diagnostics(self) -> dict[str, float | int | bool]:
        return {
            "completion_rank": self.rank,
            "completion_iterations": self.iterations,
            "completion_change": self.change,
            "completion_converged": self.converged,
            "hidden_entries": self.hidden,
        }


def complete(
    values: torch.Tensor, visible: torch.Tensor, rank: int, iterations: int = 300, tol: float = 1e-9
) -> Completion:
    """``values`` (a, b) with only ``visible`` entries known, completed at rank ``rank`` (hard impute)."""
    seen = visible.to(torch.bool)
    known = torch.where(seen, values.detach().to(torch.float64), torch.zeros((), dtype=torch.float64))
    hidden = ~seen
    k = max(1, min(rank, min(known.shape) - 1))
    filled = known.clone()
    approx = known
    change, done = float("inf"), 0
    for step in range(1, iterations + 1):
        done = step
        u, s, vh = torch.linalg.svd(filled, full_matrices=False)
        approx = (u[:, :k] * s[:k]) @ vh[:k]
        before = filled[hidden]
        after = approx[hidden]
        scale = float(after.norm()) or 1.0
        change = float((after - before).norm()) / scale
        filled = torch.where(hidden, approx, known)
        if change < tol:
            break
    # the rank-k approximant: its rows span at most k directions (the filled matrix, seen entries and all, would
    # carry the seen entries' departure from rank k into every direction until the iteration has converged)
    return Completion(approx, k, done, change, change < tol, int(hidden.sum()))
