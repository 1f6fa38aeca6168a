"""The noisy steps one client has charged to its privacy accountant, kept in the run folder.

Sample-level DP's ε is a function of every noisy step a client has taken. The accountant lives in the
client's memory, so a client started again (``--resume``, or a Flower node party built anew) rebuilds it
from this ledger: one JSON line per round's training, appended before the update leaves the client. An
update that went out in a round that then failed is charged, and charged again when the round is rerun:
the aggregator may have seen both. A round a client trained in but left before sending (a dropout
``after_train``, or late for the round deadline) is not charged: nothing of it was released, and the client
then loads the global model, so nothing trained in that round reaches a later update.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from hebench.errors import PartyError


@dataclass(frozen=True)
class Charge:
    """One round's noisy steps, at the sampling rate and noise multiplier they were taken with."""

    round: int
    steps: int
    sample_rate: float
    noise_multiplier: float


class PrivacyLedger:
    """Append-only ledger of one client's charges in one configuration (``RUN/checkpoints/<label>/``)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def charges(self) -> list[Charge]:
        """Every charge recorded so far (none when the ledger does not exist yet)."""
        if not self.path.exists():
            return []
        lines = self.path.read_text().splitlines()
        found = []
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                found.append(Charge(**json.loads(line)))
            except (ValueError, TypeError) as err:
                if number == len(lines):
                    break  # a line cut short by a crash while appending: that step never left the client
                raise PartyError(
                    f"privacy ledger {self.path} line {number} is unreadable ({err})",
                    "restore the file, or rerun without --resume into a new --out (ε cannot be continued without it)",
                ) from None
        return found

    def append(self, charge: Charge) -> None:
        """Record ``charge`` durably (synced before the update is sent)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a") as out:
            out.write(json.dumps(asdict(charge)) + "\n")
            out.flush()
            os.fsync(out.fileno())
