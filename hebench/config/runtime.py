"""How a run is hosted and measured: the ``runtime:`` and ``measure:`` blocks."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from hebench.config.base import Frozen, check_wait
from hebench.config.steady import warmup_rounds

AUTO_POOL_ABOVE = 8  # runtime.hosting: auto gives each client its own process up to this many clients


class RuntimeSpec(Frozen):
    """How the local runtime hosts clients (``hebench run`` without ``--engine flower``).

    ``process``: one OS process per client, isolated as FedNIC's parties are. ``pool``: clients run as
    threads of ``workers`` processes, each keeping its own data, model, keys and connections, each
    charged its own thread's CPU time. ``auto``: one process per client up to ``AUTO_POOL_ABOVE``
    clients, the pool beyond.
    """

    hosting: Literal["auto", "process", "pool"] = "auto"
    workers: int | None = Field(None, ge=1)  # pool processes; default: the cores the run may use
    # values per streamed chunk of an update and of an aggregate (whole ciphertexts; offload: offload.chunk_values)
    chunk_values: int = Field(65536, ge=1)
    # finished chunks of an aggregate the aggregator keeps in memory; the rest wait in a temporary file until sent
    aggregate_memory_mb: int = Field(256, ge=0)

    @model_validator(mode="after")
    def _workers_need_pool(self) -> RuntimeSpec:
        if self.workers is not None and self.hosting == "process":
            raise ValueError("workers sizes the pool; with hosting: process every client has its own process")
        return self


class MeasureSpec(Frozen):
    decryption_error: bool = True  # compare the decrypted aggregate with plaintext FedAvg
    transcripts: bool = False  # keep every byte each party received (security tests)
    timeout_s: float = Field(900.0, gt=0)  # longest wait for one message (a round's budget)
    setup_timeout_s: float = Field(300.0, gt=0)  # every party connected, keyed and ready within this
    # rounds measured and recorded but kept out of headline figures; None: 1 when training.rounds >= 2, else 0
    warmup_rounds: int | None = Field(None, ge=0)

    @field_validator("timeout_s", "setup_timeout_s")
    @classmethod
    def _finite_wait(cls, value: float, info: ValidationInfo) -> float:
        check_wait(f"measure.{info.field_name}", value)
        return value

    def warmup_for(self, rounds: int) -> int:
        """The warm-up rounds of a run of ``rounds`` rounds (at least one steady round is always left)."""
        return warmup_rounds(self.warmup_rounds, rounds)
