"""Whether a campaign's attack can show a defence at all: "defended" means the attack recovers fewer images
from a protected view than from the unprotected one, so an attack run with fewer steps or restarts than its
recipe, or one that recovers nothing from the unprotected view, cannot show it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hebench.inversion.evaluate import AttackPlan
from hebench.inversion.recipes import load_recipe
from hebench.results.attack_views import View


def weak_attack_notes(plans: Sequence[AttackPlan]) -> list[str]:
    """One line per attack run below its recipe's strength (fewer steps, or fewer restarts than its recipe's)."""
    notes = []
    for attack, steps, restarts in sorted({(p.attack, p.steps, p.restarts) for p in plans}):
        cfg = load_recipe(attack)
        if cfg.imprint is not None:  # an analytic read-out: no steps, no restarts to speak of
            continue
        weak = []
        if steps is not None and steps < cfg.steps:
            weak.append(f"{steps} steps where its recipe runs {cfg.steps}")
        if restarts < cfg.restarts:
            weak.append(f"best of {restarts} restart(s) where its recipe needs best of {cfg.restarts}")
        if weak:
            notes.append(
                f"{cfg.name} ran with {' and '.join(weak)}: a weaker attack than the recipe's, so a configuration "
                "it fails against is not shown defended (raise --steps and --restarts)"
            )
    return notes


def raw_failed_notes(summaries: Sequence[dict[str, Any]]) -> list[str]:
    """One line per attack that recovered no image from an unprotected (raw) view: nothing it failed against is
    shown defended by it."""
    notes = []
    for s in summaries:
        success = (s.get("scores") or {}).get("success")
        if s.get("dry_run") or s.get("view") != View.RAW or not success or success.get("k"):
            continue
        notes.append(
            f"{s['plan']}: {s['attack']} recovered no image from this unprotected view (0 of {success['n']}), so "
            "it cannot show that any protection defends: attack with more steps and restarts"
        )
    return notes
