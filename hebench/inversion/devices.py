"""Where attacks run: ``auto`` is CUDA when a GPU is usable, else the CPU."""

from __future__ import annotations

import torch


def resolve_device(device: str) -> str:
    """``auto`` → ``cuda`` when a GPU is usable, else ``cpu``; other names pass through."""
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return device
