"""What every party process shares: its start-up context and error reporting."""

from __future__ import annotations

import hashlib
import os
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import numpy as np

from hebench.data.federated import ClientData
from hebench.errors import HebenchError
from hebench.suite import Configuration, Suite


@dataclass(frozen=True)
class PartyContext:
    """Everything a party needs, handed over at process start (picklable)."""

    suite: Suite
    config: Configuration
    run_dir: Path
    authkey: bytes
    start_round: int
    input_shape: tuple[int, int, int]
    num_classes: int
    client_index: int = -1
    data: ClientData | None = None
    test: tuple[Any, Any] | None = None  # (x, y) for the evaluating client
    initial: np.ndarray | None = None  # resumed global model
    cores: tuple[int, ...] | None = None  # pin this party (host side) to these cores

    @property
    def run_id(self) -> str:
        """Identifies one configuration's run (its key deliveries) without revealing the shared key."""
        return hashlib.sha256(b"hebench-run:" + self.authkey).hexdigest()[:16]

    @property
    def timeout_s(self) -> float:
        return self.suite.measure.timeout_s

    def transcript(self, role: str) -> Path | None:
        if not self.suite.measure.transcripts:
            return None
        folder = self.run_dir / "transcripts" / safe_label(self.config.label)
        folder.mkdir(parents=True, exist_ok=True)
        return folder / f"{role}.bin"


def safe_label(label: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in label)


def party_main(
    role: str,
    body: Callable[[PartyContext, Connection, Any], None],
    ctx: PartyContext,
    control: Connection,
    records: Any,
) -> None:
    """Process entry: limit threads, run the party, report a failure as a record."""
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    if ctx.cores:
        os.sched_setaffinity(0, set(ctx.cores))
    import torch

    torch.set_num_threads(1)
    try:
        body(ctx, control, records)
    except HebenchError as err:
        records.put({"kind": "party_error", "role": role, "problem": err.problem, "fix": err.fix})
        raise SystemExit(1) from None
    except BaseException as err:  # report, then die: the runner turns this into a PartyError
        records.put(
            {
                "kind": "party_error",
                "role": role,
                "problem": f"{type(err).__name__}: {err}",
                "fix": "",
                "trace": traceback.format_exc(),
            }
        )
        raise SystemExit(1) from None
