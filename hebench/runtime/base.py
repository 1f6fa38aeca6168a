"""What a runtime is: something that starts one configuration's parties and lets the runner watch them.

The runner owns the suite loop, supervision and record collection once; a
runtime only starts parties (local processes, or a Flower run) and says how
to wind them down. Every party reports through one records queue.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from hebench.config import Configuration, Suite
from hebench.data.federated import FederatedData
from hebench.results.records import Record


class Supervised(Protocol):
    """A party the runner watches (a process, or ``flwr run``)."""

    @property
    def exitcode(self) -> int | None: ...

    def is_alive(self) -> bool: ...

    def join(self, timeout: float | None = None) -> None: ...

    def terminate(self) -> None: ...


@dataclass(frozen=True)
class ConfigurationRun:
    """One configuration to run, as the runner hands it to a runtime."""

    suite: Suite
    config: Configuration
    run_dir: Path
    data: FederatedData
    start_round: int
    initial: np.ndarray | None  # the resumed global model


@dataclass
class Started:
    """What a runtime started: its parties by name, their records queue, and how to end them."""

    records: Any
    parties: dict[str, Supervised] = field(default_factory=dict)
    stop: Callable[[], None] = lambda: None
    # after the last round: the runtime's closing records (Flower's server summary), written by ``write``
    finish: Callable[[Callable[[Record], Any]], None] = lambda write: None
    describe_exit: Callable[[str, int], tuple[str, str]] | None = None  # a party's death, in words
    expected_setup: frozenset[str] = frozenset()  # parties that must report set-up ("aggregator", "client-0", …)
    extra_aggregators: int = 0  # aggregator processes beside the main one, each reporting every round


class Runtime(Protocol):
    name: str
    supports_resume: bool

    def session(self, suite: Suite, run_dir: Path, note: Callable[[str], None]) -> contextlib.AbstractContextManager:
        """Held around the whole suite (Flower: a loopback federation when none was given)."""
        ...

    def configuration_fields(self) -> dict[str, Any]:
        """Extra fields of each configuration record (e.g. ``runtime: flower``)."""
        ...

    def start(self, run: ConfigurationRun, control_recv: Callable[[Any, str, Started], Any]) -> Started:
        """Start the configuration's parties; ``control_recv`` waits for a party's start-up answer, supervised."""
        ...


@contextlib.contextmanager
def nothing_to_hold() -> Iterator[None]:
    yield
