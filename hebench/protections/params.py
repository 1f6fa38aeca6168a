"""The base of a mode's own parameters (``params:`` of a configuration whose mode brings its own).

Such modes send no HE ciphertext (their adapter is ``plain``), so ``params`` configure the protocol, not the
adapter; each mode's subclass lives in its package (``hebench.protections.secagg.params``, ...). Spec level:
pure data and arithmetic, no protocol code.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


class ModeParams(BaseModel):
    """Base of a mode's own parameters."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    @property
    def extra_aggregators(self) -> int:
        """Aggregator processes beside the main one (non-colluding share holders)."""
        return 0

    @property
    def variant(self) -> str | None:
        """The variant of the mode these parameters run, where it has threat rules of its own
        (``ModeSpec.variant_threats``); None: the mode's ``threats``."""
        return None

    def security(self, clients: int) -> dict[str, Any] | None:
        """What the configuration record says about this protocol's strength, for ``clients`` per round."""
        return None

    def check_clients(self, clients: int) -> None:
        """Raise ``ValueError`` (problem and fix) if these parameters cannot serve ``clients`` per round."""
