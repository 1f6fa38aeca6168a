"""What a campaign computes once for all its plans: datasets, victims' uploads, selective score maps and masks.

The plans of a campaign (``hebench attack --full``: 72 plans, 56 distinct attacks) differ in what the aggregator
sees (mask, ratio, attacker) far more often than in what the victim computes: the dataset, the victim's upload, the
score map a selective mask is cut from and the mask itself are the same for many of them, and were made again for
each (``hebench attack --full --dry-run``: 17.1 s of campaign before, 7.5 s with them shared, the records identical).
Values are shared, not copied: whoever reads one must not change it in place.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Hashable
from typing import TypeVar

import numpy as np
import torch

T = TypeVar("T")


class Memo:
    """Values by key, each made once (by the first caller that asks for it)."""

    def __init__(self) -> None:
        self._values: dict[Hashable, object] = {}
        self.made = 0
        self.reused = 0

    def get(self, key: Hashable, make: Callable[[], T]) -> T:
        if key in self._values:
            self.reused += 1
        else:
            self._values[key] = make()
            self.made += 1
        return self._values[key]  # type: ignore[return-value]


def digest(tensor: torch.Tensor) -> str:
    """A key for a tensor's values (its dtype and shape included): slices of the same data are new objects."""
    array = np.ascontiguousarray(tensor.detach().cpu().numpy())
    return hashlib.sha1(f"{array.dtype}{array.shape}".encode() + array.tobytes()).hexdigest()
