"""Where datasets and their cards live."""

from __future__ import annotations

import os
from pathlib import Path

import yaml

from hebench.errors import DatasetError

PROJECT_ROOT = Path(__file__).resolve().parents[2]  # the source checkout, where hebench runs from one
CARDS = Path(__file__).parent / "datasets"  # package data: the checkout's datasets/ (a link to it there)
FEMNIST_SAMPLE = CARDS / "femnist-sample" / "fedlab"  # 5 real writers, LEAF JSON (see its SOURCE.md)
SHAKESPEARE_SAMPLE = CARDS / "shakespeare-sample" / "roles.json"  # 20 roles of tiny shakespeare (its SOURCE.md)


def cache_dir() -> Path:
    """``$HEBENCH_DATA``, else ``datasets/cache`` in a source checkout, else ``~/.cache/hebench/datasets`` (an
    installed hebench never writes into its own package)."""
    env = os.environ.get("HEBENCH_DATA")
    if env:
        return Path(env)
    if (PROJECT_ROOT / "datasets").is_dir() and (PROJECT_ROOT / "pyproject.toml").is_file():
        return PROJECT_ROOT / "datasets" / "cache"
    return Path.home() / ".cache" / "hebench" / "datasets"


def card(name: str) -> dict:
    path = CARDS / f"{name}.yaml"
    if not path.is_file():
        raise DatasetError(
            f"no dataset card for '{name}' at {path}", "reinstall hebench (its dataset cards are package data)"
        )
    return yaml.safe_load(path.read_text())


def femnist_sample() -> Path:
    """The FEMNIST sample shipped with hebench (``datasets/femnist-sample``; LEAF JSON: ``train/`` and ``test/``)."""
    if not (FEMNIST_SAMPLE / "train").is_dir():
        raise DatasetError(
            f"the FEMNIST sample is not at {FEMNIST_SAMPLE}",
            "reinstall hebench (the sample is package data, from datasets/femnist-sample), or set data.path",
        )
    return FEMNIST_SAMPLE


def shakespeare_sample() -> Path:
    """The Shakespeare sample shipped in ``datasets/shakespeare-sample`` (20 roles, role JSON)."""
    if not SHAKESPEARE_SAMPLE.is_file():
        raise DatasetError(
            f"the Shakespeare sample is not at {SHAKESPEARE_SAMPLE}",
            "reinstall hebench (the sample is package data, from datasets/shakespeare-sample), or pass a path",
        )
    return SHAKESPEARE_SAMPLE
