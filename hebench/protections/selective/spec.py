"""Selective encryption's spec: the ``selective:`` block of a configuration (which coordinates to encrypt).

It combines with a mode whose spec allows it (``ModeSpec.selective``: host-he, offload); the mask itself is made
by :mod:`hebench.protections.selective.masks`. Spec level: pure data, no protocol code.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class SelectiveSpec(BaseModel):
    """Encrypt only the parameters a mask selects (FedML-HE); the rest travels in plaintext."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    mask: Literal["sensitivity", "magnitude", "random", "layers"] = "sensitivity"
    ratio: float = Field(0.1, ge=0, le=1)  # fraction encrypted (ignored by layers)
    layers: tuple[str, ...] = ("first", "last")  # names or patterns, for mask: layers
    samples: int = Field(16, ge=1)  # K local samples the sensitivity map averages over

    @property
    def needs_agreement(self) -> bool:
        """Masks from score maps are agreed under encryption first (FedML-HE); layer masks are known up front."""
        return self.mask != "layers"
