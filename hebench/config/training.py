"""The ``training:`` block: rounds, local training, client selection, deadlines."""

from __future__ import annotations

import math
from typing import Literal

from pydantic import Field, field_validator

from hebench.config.base import Frozen, check_wait


class TrainingSpec(Frozen):
    rounds: int = Field(3, ge=1)
    clients_per_round: int | None = Field(None, ge=1)  # None: every client
    local_epochs: int = Field(1, ge=1)
    local_steps: int | None = Field(None, ge=1)  # overrides local_epochs (FedNIC: 1 step of 32 images)
    batch_size: int = Field(32, ge=1)
    optimizer: Literal["sgd", "adam"] = "sgd"
    lr: float = Field(0.05, gt=0)
    momentum: float = Field(0.0, ge=0, lt=1)
    key_rotation_rounds: int | None = Field(None, ge=1)  # new keys every K rounds (None: one key set per run)
    target_accuracy: float | None = None  # time-to-accuracy: the first round whose global accuracy reaches this
    # faults (docs/protocol.md "Dropouts and stragglers"): a client whose upload (compute + its link) misses it is late
    round_deadline_s: float | None = None  # None: no deadline
    min_clients: int | None = None  # fewer arrivals than this: the round is skipped (the global model unchanged)
    overselect: float = 1.0  # select ceil(clients_per_round * overselect) clients, so enough arrive

    @field_validator("round_deadline_s")
    @classmethod
    def _positive_deadline(cls, value: float | None) -> float | None:
        if value is not None and not value > 0:
            raise ValueError(f"round_deadline_s must be positive seconds, got {value}: write e.g. 30, or leave it out")
        return check_wait("round_deadline_s", value)

    @field_validator("min_clients")
    @classmethod
    def _at_least_one(cls, value: int | None) -> int | None:
        if value is not None and value < 1:
            raise ValueError(f"min_clients must be at least 1, got {value}: write e.g. 2, or leave it out")
        return value

    @field_validator("overselect")
    @classmethod
    def _overselect(cls, value: float) -> float:
        if not value >= 1:
            raise ValueError(f"overselect is a factor of at least 1 (1: no over-selection), got {value}")
        return value

    def selected_count(self, clients: int) -> int:
        """How many clients a round selects: ``clients_per_round`` (every client when unset) times
        ``overselect``, rounded up, at most ``clients``."""
        base = self.clients_per_round or clients
        return min(clients, math.ceil(base * self.overselect - 1e-9))

    @field_validator("target_accuracy")
    @classmethod
    def _a_fraction(cls, value: float | None) -> float | None:
        if value is not None and not 0 < value <= 1:
            raise ValueError(f"target_accuracy is a fraction of test samples in (0, 1], got {value}: write e.g. 0.9")
        return value
