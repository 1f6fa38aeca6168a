"""The ``faults:`` block of a suite (and of a configuration, whose keys override the suite's).

``dropout``: the probability that a selected client leaves a round; ``dropout_phase``: where it leaves
(``before_train``, ``after_train``, ``after_upload``, or ``random``: one of the three, drawn per fault);
``stragglers: {share, slowdown}``: the probability that a client computes ``slowdown`` times slower in a
round; ``seed``: the fault seed (default: the suite's seed). Every configuration of a suite draws from the
same seed, so the same clients fail at the same points in every configuration and runtime
(:func:`hebench.faults.draw.fault_for`). A key left out (None) is inherited, as in ``network:``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import field_validator

from hebench.config.base import Frozen, Seed

PHASES = ("before_train", "after_train", "after_upload")
# Which modes finish rounds with the survivors, or survive a client process that dies, is each mode's spec's to say
# (``ModeSpec.survives_dropout``, ``ModeSpec.survives_client_loss``).


class StragglerSpec(Frozen):
    share: float = 0.0  # probability that a selected client is slow in a round
    slowdown: float = 1.0  # its compute takes this many times as long (wall time; CPU as measured)

    @field_validator("share")
    @classmethod
    def _probability(cls, value: float) -> float:
        if not 0 <= value < 1:
            raise ValueError(f"stragglers.share is a probability in [0, 1), got {value}: write e.g. 0.2")
        return value

    @field_validator("slowdown")
    @classmethod
    def _at_least_one(cls, value: float) -> float:
        if not value >= 1:
            raise ValueError(f"stragglers.slowdown is a factor of at least 1 (slower than this machine), got {value}")
        return value


class FaultsSpec(Frozen):
    dropout: float | None = None
    dropout_phase: Literal["before_train", "after_train", "after_upload", "random"] | None = None
    stragglers: StragglerSpec | None = None
    seed: Seed | None = None

    @field_validator("dropout")
    @classmethod
    def _probability(cls, value: float | None) -> float | None:
        if value is not None and not 0 <= value < 1:
            raise ValueError(f"dropout is a probability in [0, 1), got {value}: write e.g. 0.1 for 10 %")
        return value

    def over(self, base: FaultsSpec | None) -> FaultsSpec:
        """This spec's keys over ``base``'s (a configuration's faults over the suite's)."""
        if base is None:
            return self
        given = {k: getattr(self, k) for k in type(self).model_fields if getattr(self, k) is not None}
        return base.model_copy(update=given)

    def resolved(self, suite_seed: int) -> FaultsSpec:
        """Every key set: dropout 0, phase ``random``, no stragglers, the suite's seed."""
        return FaultsSpec(
            dropout=self.dropout or 0.0,
            dropout_phase=self.dropout_phase or "random",
            stragglers=self.stragglers or StragglerSpec(),
            seed=suite_seed if self.seed is None else self.seed,
        )

    @property
    def active(self) -> bool:
        """Any client may drop or lag."""
        s = self.stragglers
        return bool(self.dropout) or (s is not None and s.share > 0 and s.slowdown > 1)

    @property
    def label(self) -> str:
        """``dropout 30% random`` / ``+ stragglers 20% x4``."""
        parts = [f"dropout {self.dropout or 0:.0%} {self.dropout_phase or 'random'}"]
        s = self.stragglers
        if s is not None and s.share > 0:
            parts.append(f"stragglers {s.share:.0%} x{s.slowdown:g}")
        return " + ".join(parts)
