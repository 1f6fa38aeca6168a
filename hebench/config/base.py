"""What every block of a suite shares: frozen, no unknown keys, and problems that name their field."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict

SEED_MAX = 2**32 - 1  # numpy's legacy generators take seeds below 2^32; torch takes them below 2^64
LONGEST_WAIT_S = 7 * 24 * 3600.0  # a timeout or deadline beyond a week is a typo (1e308 overflows every clock)


class Frozen(BaseModel):
    """A suite block: immutable once validated, and a key it does not know is an error (not ignored)."""

    model_config = ConfigDict(frozen=True, extra="forbid")


def _seed_in_range(value: Any) -> Any:
    """A seed every generator of the run accepts (checked before pydantic turns 1e26 into an integer)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and not 0 <= value <= SEED_MAX:
        raise ValueError(
            f"a seed is a whole number from 0 to {SEED_MAX} (what numpy's and torch's generators take), "
            f"got {value if isinstance(value, int) else format(value, 'g')}: write e.g. 0"
        )
    return value


Seed = Annotated[int, BeforeValidator(_seed_in_range)]


def check_wait(name: str, value: float | None) -> float | None:
    """``value`` as a timeout or deadline in seconds: positive and at most :data:`LONGEST_WAIT_S` (None: none)."""
    if value is not None and not 0 < value <= LONGEST_WAIT_S:
        raise ValueError(
            f"{name} is a wait in seconds, more than 0 and at most {LONGEST_WAIT_S:g} (a week), got {value:g}: "
            "write e.g. 900"
        )
    return value


class FieldProblem(ValueError):
    """A validator's problem with one field of its block, named by its path from that block (``"k"``,
    ``"training.clients_per_round"``): the suite's error then names that field, not the block that checked it."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(problem)
        self.field = field


def configuration_name(index: int, label: str | None = None) -> str:
    """How errors name a configuration: counted from 1 as users count, with its path as ``--set`` writes it
    (from 0) and its label where known: ``configuration 2 (configurations.1, host-he/tenseal-ckks)``."""
    return f"configuration {index + 1} (configurations.{index}{', ' + label if label else ''})"


def field_name(path: tuple[int | str, ...] | list[int | str]) -> str:
    """How errors name a field: ``field 'data.clients'``; inside a configuration, which one as users count:
    ``configuration 2, field 'configurations.1.params'``."""
    dotted = ".".join(str(p) for p in path)
    if len(path) >= 2 and path[0] == "configurations" and isinstance(path[1], int):
        return f"configuration {path[1] + 1}, field '{dotted}'"
    return f"field '{dotted}'"
