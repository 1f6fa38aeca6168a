"""What a configuration adds to its mode: ``selective:`` encryption, ``dp:`` noise on its updates, and a
modelled ``tee:`` cost row."""

from __future__ import annotations

from pydantic import Field

from hebench.config.base import Frozen
from hebench.protections.dp.spec import DPSpec
from hebench.protections.selective.spec import SelectiveSpec

__all__ = ["DPSpec", "SelectiveSpec", "TEESpec"]


class TEESpec(Frozen):
    """A *modelled* TEE row: costs of this configuration's measured run scaled by a published linear model.

    ``coefficients`` is a YAML file of overhead coefficients per mechanism (none is shipped: see
    docs/dp-tls-tee.md); ``mechanisms`` picks which of them are applied.
    """

    coefficients: str
    mechanisms: tuple[str, ...] = Field(min_length=1)
