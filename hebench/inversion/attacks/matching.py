"""Gradient-matching objectives over the visible coordinates only."""

from __future__ import annotations

import torch


def l2_distance(dummy: tuple[torch.Tensor, ...], target: tuple[torch.Tensor, ...], masks) -> torch.Tensor:
    """DLG: squared Euclidean distance."""
    total = dummy[0].new_zeros(())
    for i, (d, t) in enumerate(zip(dummy, target, strict=True)):
        diff = d - t if masks is None else (d - t) * masks[i]
        total = total + (diff * diff).sum()
    return total


def cosine_distance(dummy: tuple[torch.Tensor, ...], target: tuple[torch.Tensor, ...], masks) -> torch.Tensor:
    """Inverting Gradients: 1 - cosine similarity of all tensors taken together (masked variant: visible only)."""
    dot = dummy[0].new_zeros(())
    nd = dummy[0].new_zeros(())
    nt = dummy[0].new_zeros(())
    for i, (d, t) in enumerate(zip(dummy, target, strict=True)):
        if masks is not None:
            d, t = d * masks[i], t * masks[i]
        dot = dot + (d * t).sum()
        nd = nd + (d * d).sum()
        nt = nt + (t * t).sum()
    return 1 - dot / (nd.sqrt() * nt.sqrt() + 1e-12)


def total_variation(x: torch.Tensor) -> torch.Tensor:
    """Anisotropic TV: mean |vertical| + mean |horizontal| neighbour difference (interior pairs only).

    breaching takes the mean of |dx| + |dy| with zero padding, which also pulls the last row and column
    towards 0; in hebench's [0, 1] pixel space that is black (in breaching's normalised space, the mean
    colour), so the padding is left out here.
    """
    return (x[..., 1:, :] - x[..., :-1, :]).abs().mean() + (x[..., :, 1:] - x[..., :, :-1]).abs().mean()


DISTANCES = {"l2": l2_distance, "cosine": cosine_distance}
