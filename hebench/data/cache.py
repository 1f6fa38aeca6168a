"""Where datasets and their cards live."""

from __future__ import annotations

import os
from pathlib import Path

import yaml

from hebench.errors import DatasetError

PROJECT_ROOT = Path(__file__).resolve().parents[2]
CARDS = PROJECT_ROOT / "datasets"
FEMNIST_SAMPLE = CARDS / "femnist-sample" / "fedlab"  # 5 real writers, LEAF JSON (see its SOURCE.md)
SHAKESPEARE_SAMPLE = CARDS / "shakespeare-sample" / "roles.json"  # 20 roles of tiny shakespeare (its SOURCE.md)


def cache_dir() -> Path:
    """``$HEBENCH_DATA``, else ``datasets/cache`` in a source checkout, else ``~/.cache/hebench/datasets``."""
    env = os.environ.get("HEBENCH_DATA")
    if env:
        return Path(env)
    if CARDS.is_dir():
        return CARDS / "cache"
    return Path.home() / ".cache" / "hebench" / "datasets"


def card(name: str) -> dict:
    path = CARDS / f"{name}.yaml"
    if not path.is_file():
        raise DatasetError(f"no dataset card for '{name}' at {path}", "run hebench from its source checkout")
    return yaml.safe_load(path.read_text())


def femnist_sample() -> Path:
    """The FEMNIST sample shipped in ``datasets/femnist-sample`` (LEAF JSON: ``train/`` and ``test/``)."""
    if not (FEMNIST_SAMPLE / "train").is_dir():
        raise DatasetError(
            f"the FEMNIST sample is not at {FEMNIST_SAMPLE}",
            "run hebench from its source checkout (the sample ships in datasets/femnist-sample), or set data.path",
        )
    return FEMNIST_SAMPLE


def shakespeare_sample() -> Path:
    """The Shakespeare sample shipped in ``datasets/shakespeare-sample`` (20 roles, role JSON)."""
    if not SHAKESPEARE_SAMPLE.is_file():
        raise DatasetError(
            f"the Shakespeare sample is not at {SHAKESPEARE_SAMPLE}",
            "run hebench from its source checkout (the sample ships in datasets/shakespeare-sample), or pass a path",
        )
    return SHAKESPEARE_SAMPLE
