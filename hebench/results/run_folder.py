"""The layout of one run's folder: every path a run writes or reads, in one place.

::

    results.jsonl                         the records (JSON lines)
    suite.yaml                            the validated suite, overrides applied
    tokenizer/ (vocab.json, merges.txt)   text runs: the vocabulary the clients' text was encoded with
    language-model.json                   text runs: the decoder, its vocabulary, each configuration's fine-tuning
    checkpoints/<label>/round-N.npy       global model after round N (for --resume)
    checkpoints/<label>/dp-ledger-client-I.jsonl  sample-level DP: client I's charged steps (ε across --resume)
    masks/<label>.npy                     the agreed selective-encryption mask
    transcripts/<label>/<role>.bin        every byte a party received (measure.transcripts)
    attacks/<plan>.png                    reconstructions beside originals
    report.html, report_files/            the HTML report ``hebench run`` writes (report-2.html after a resume)
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

from hebench.errors import ParameterError

RESULTS_FILE = "results.jsonl"
SUITE_FILE = "suite.yaml"
REPORT_FILE = "report.html"


def safe_label(label: str) -> str:
    """A label or plan name as one file-name component: "offload/tenseal-ckks" → "offload_tenseal-ckks"."""
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in label)


def unused_name(path: Path) -> Path:
    """``path`` if nothing is there yet, else the first free ``stem-2``, ``stem-3``… beside it."""
    n = 1
    candidate = path
    while candidate.exists():
        n += 1
        candidate = path.with_name(f"{path.stem}-{n}{path.suffix}")
    return candidate


def results_file(path: str | os.PathLike[str]) -> Path:
    """The JSON-lines file ``path`` names: a run folder's ``results.jsonl``, or a ``.jsonl`` file itself.

    Raises :class:`ParameterError` naming what is there instead (nothing, a folder without results, another
    kind of file), so a command never reads an empty or foreign input as an empty run.
    """
    p = Path(path)
    if p.is_dir():
        inside = p / RESULTS_FILE
        if inside.is_file():
            return inside
        others = sorted(q.name for q in p.glob("*.jsonl"))
        hint = f"pass {p / others[0]}" if others else "pass a run folder written by `hebench run`"
        raise ParameterError(f"{p} is a folder without {RESULTS_FILE}", hint)
    if not p.exists():
        raise ParameterError(
            f"{p} does not exist", "pass a run folder written by `hebench run` (e.g. results/NAME-DATE)"
        )
    if p.suffix != ".jsonl":
        raise ParameterError(
            f"{p} is not a hebench results file (expected a run folder or a .jsonl file)",
            "pass a run folder written by `hebench run`, or a hebench JSON-lines file (results.jsonl, attacks.jsonl)",
        )
    return p


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

    @property
    def tokenizer(self) -> Path:
        """Text runs: the folder holding the run's ``vocab.json`` and ``merges.txt`` (GPT-2's layout)."""
        return self.root / "tokenizer"

    @property
    def language_model(self) -> Path:
        """Text runs: what the decoder is (shape, vocabulary, base) and how each configuration fine-tunes it."""
        return self.root / "language-model.json"

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
    def report(self) -> Path:
        """The HTML report ``hebench run`` writes at its end (figures and CSV in ``report_files/``)."""
        return self.root / REPORT_FILE

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
