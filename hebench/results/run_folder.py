"""The layout of one run's folder: every path a run writes or reads, in one place.

::

    results.jsonl                         the records (JSON lines)
    suite.yaml                            the validated suite, overrides applied
    checkpoints/<label>/round-N.npy       global model after round N (for --resume)
    checkpoints/<label>/dp-ledger-client-I.jsonl  sample-level DP: client I's charged steps (ε across --resume)
    masks/<label>.npy                     the agreed selective-encryption mask
    transcripts/<label>/<role>.bin        every byte a party received (measure.transcripts)
    attacks/<plan>.png                    reconstructions beside originals
    certs/                                TLS certificates generated for local engines
    flower-app/ (run-config-<label>.toml) the Flower app and its run configurations
    flower-federation/                    a loopback Flower federation
    flower-logs/<label>.log               ``flwr run`` output

Paths are computed, never created, except by the ``ensure_*`` helpers.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

RESULTS_FILE = "results.jsonl"
SUITE_FILE = "suite.yaml"


def safe_label(label: str) -> str:
    """A label or plan name as one file-name component: "offload/tenseal-ckks" → "offload_tenseal-ckks"."""
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in label)


@dataclass(frozen=True)
class RunFolder:
    """One run's folder and every path inside it."""

    root: Path

    @classmethod
    def of(cls, path: str | os.PathLike[str]) -> RunFolder:
        """The run folder of ``path``: the folder itself, or the folder of a results file inside it."""
        p = Path(path)
        return cls(p.parent if p.name == RESULTS_FILE or p.suffix == ".jsonl" else p)

    @property
    def results(self) -> Path:
        return self.root / RESULTS_FILE

    @property
    def suite(self) -> Path:
        return self.root / SUITE_FILE

    def checkpoint(self, label: str, round_index: int) -> Path:
        return self.checkpoints(label) / f"round-{round_index}.npy"

    def checkpoints(self, label: str) -> Path:
        return self.root / "checkpoints" / safe_label(label)

    def dp_ledger(self, label: str, client: int) -> Path:
        return self.checkpoints(label) / f"dp-ledger-client-{client}.jsonl"

    def mask(self, label: str) -> Path:
        return self.root / "masks" / f"{safe_label(label)}.npy"

    def transcripts(self, label: str) -> Path:
        return self.root / "transcripts" / safe_label(label)

    def transcript(self, label: str, role: str) -> Path:
        return self.transcripts(label) / f"{role}.bin"

    @property
    def attacks(self) -> Path:
        return self.root / "attacks"

    def attack_grid(self, plan: str) -> Path:
        return self.attacks / f"{safe_label(plan)}.png"

    @property
    def certs(self) -> Path:
        return self.root / "certs"

    @property
    def flower_app(self) -> Path:
        return self.root / "flower-app"

    def flower_run_config(self, label: str) -> Path:
        return self.flower_app / f"run-config-{safe_label(label)}.toml"

    @property
    def flower_federation(self) -> Path:
        return self.root.resolve() / "flower-federation"

    def flower_log(self, label: str) -> Path:
        return self.root / "flower-logs" / f"{safe_label(label)}.log"

    def resolve(self, path: str | os.PathLike[str]) -> Path:
        """A path a suite names (e.g. ``offload.calibration``): as given if it exists, else inside the run folder."""
        p = Path(path)
        if p.is_absolute() or p.exists():
            return p
        inside = self.root / p
        return inside if inside.exists() else p

    def ensure(self, path: Path) -> Path:
        """``path`` with its parent folder created."""
        path.parent.mkdir(parents=True, exist_ok=True)
        return path
