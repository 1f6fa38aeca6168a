"""Secret sharing's parameters (``params:`` of a secret-sharing configuration): holders, quantisation, holder loss.

Spec level: pure data and arithmetic, no protocol code.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import Field

from hebench.protections.params import ModeParams


class SecretSharingParams(ModeParams):
    """Additive n-of-n sharing over the 64-bit ring to ``aggregators`` non-colluding servers (Prio, COPA)."""

    aggregators: int = Field(2, ge=2, le=4)
    bits: int = Field(24, ge=2, le=40)  # quantisation: signed levels 2^(bits-1) - 1
    clip: float = Field(8.0, gt=0)
    # a share holder lost (its process died): "end" the run (its record names the holder), or "skip": record the
    # round as skipped naming the holder and end this configuration only (the suite goes on with the next one); a
    # holder gone for good would fail every later round of the configuration, so none is run in vain
    on_holder_loss: Literal["end", "skip"] = "end"

    @property
    def extra_aggregators(self) -> int:
        return self.aggregators - 1

    def security(self, clients: int) -> dict[str, Any]:
        return {
            "protocol": "additive-sharing",
            "ring_bits": 64,
            "aggregators": self.aggregators,
            "note": (
                f"each share is uniform on the 64-bit ring: one aggregator alone learns nothing; "
                f"all {self.aggregators} colluding recover every update"
            ),
        }

    def max_weight_sum(self) -> int:
        """Largest total of sample counts whose weighted sum stays inside the signed 64-bit ring."""
        return math.floor((2**63 - 1) / (2 ** (self.bits - 1) - 1))
