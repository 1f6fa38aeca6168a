"""Attack recipes: the YAML files of the top-level ``attacks/`` folder, shipped as package data."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import yaml

from hebench.errors import ParameterError
from hebench.inversion.attacks import ATTACKS, AttackConfig
from hebench.inversion.attacks.config import ENGINES, LINE_SEARCHES
from hebench.inversion.attacks.trap_weights import ImprintSpec

RECIPES = Path(__file__).resolve().parents[1] / "config" / "attacks"  # in a checkout: a link to attacks/


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
    if raw.get("imprint") is not None:
        raw["imprint"] = _imprint_spec(path, raw["imprint"])
    cfg = AttackConfig(**raw)
    if cfg.optimizer not in ATTACKS or cfg.distance not in ("l2", "cosine"):
        raise ParameterError(
            f"{path}: optimizer/distance '{cfg.optimizer}'/'{cfg.distance}' unknown",
            f"optimizer: {', '.join(sorted(ATTACKS))}; distance: l2 or cosine",
        )
    if cfg.init not in ("randn", "rand") or cfg.keep not in ("objective", "match"):
        raise ParameterError(
            f"{path}: init/keep '{cfg.init}'/'{cfg.keep}' unknown", "init: randn or rand; keep: objective or match"
        )
    if cfg.engine not in ENGINES or cfg.line_search not in LINE_SEARCHES:
        raise ParameterError(
            f"{path}: engine/line_search '{cfg.engine}'/'{cfg.line_search}' unknown",
            f"engine: {' or '.join(ENGINES)}; line_search: {' or '.join(LINE_SEARCHES)}",
        )
    if not isinstance(cfg.restarts, int) or cfg.restarts < 1:
        raise ParameterError(f"{path}: restarts {cfg.restarts!r} is not a positive integer", "write e.g. restarts: 4")
    if cfg.optimizer == "imprint-readout" and cfg.imprint is None:
        raise ParameterError(
            f"{path}: optimizer 'imprint-readout' without an imprint: section (the trap weights to plant)",
            "add imprint: {bins: 64, statistic: random}",
        )
    if cfg.optimizer != "imprint-readout" and cfg.imprint is not None:
        raise ParameterError(
            f"{path}: an imprint: section with optimizer '{cfg.optimizer}', which does not read it out",
            "use optimizer: imprint-readout, or drop the imprint: section",
        )
    return cfg


def _imprint_spec(path: Path, raw: object) -> ImprintSpec:
    fields = {f.name for f in dataclasses.fields(ImprintSpec)}
    if not isinstance(raw, dict) or set(raw) - fields:
        raise ParameterError(f"{path}: imprint must be a mapping of {sorted(fields)}", "e.g. imprint: {bins: 64}")
    spec = ImprintSpec(**raw)
    spec.check()
    return spec
