"""Attack recipes: the YAML files in the top-level ``attacks/`` folder."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import yaml

from hebench.errors import ParameterError
from hebench.inversion.attacks import OPTIMIZERS, AttackConfig

RECIPES = Path(__file__).resolve().parents[2] / "attacks"


def recipe_names() -> list[str]:
    return sorted(p.stem for p in RECIPES.glob("*.yaml"))


def load_recipe(name_or_path: str) -> AttackConfig:
    """``dlg`` reads attacks/dlg.yaml; a path reads that file."""
    path = Path(name_or_path) if name_or_path.endswith((".yaml", ".yml")) else RECIPES / f"{name_or_path}.yaml"
    if not path.is_file():
        raise ParameterError(
            f"no attack recipe '{name_or_path}' ({path})", f"choose one of {', '.join(recipe_names())}"
        )
    raw = yaml.safe_load(path.read_text()) or {}
    fields = {f.name for f in dataclasses.fields(AttackConfig)}
    unknown = set(raw) - fields
    if unknown:
        raise ParameterError(f"{path}: unknown fields {sorted(unknown)}", f"use only {', '.join(sorted(fields))}")
    cfg = AttackConfig(**raw)
    if cfg.optimizer not in OPTIMIZERS or cfg.distance not in ("l2", "cosine"):
        raise ParameterError(
            f"{path}: optimizer/distance '{cfg.optimizer}'/'{cfg.distance}' unknown",
            f"optimizer: {', '.join(OPTIMIZERS)}; distance: l2 or cosine",
        )
    return cfg
