"""A suite's attacks: one plan per configuration (what its aggregator saw) plus the
privacy–overhead frontier (masks × encrypted ratios); records, summaries and PNG grids."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from hebench.inversion.evaluate import AttackPlan, public, run_plan, save_grid, summarize
from hebench.modes import AttackerView
from hebench.results import ResultWriter
from hebench.results.run_folder import safe_label
from hebench.suite import Configuration, SelectiveSpec, Suite


def view_of(config: Configuration) -> tuple[str, SelectiveSpec | None]:
    if config.spec.attacker_view is AttackerView.FULL_UPDATE:
        return "raw", None
    if config.selective is not None:
        return "selective", config.selective
    return "he", None


def plans_for(suite: Suite, dry_run: bool = False) -> list[AttackPlan]:
    spec = suite.privacy
    if spec is None:
        return []
    common = {
        "attack": spec.attack,
        "model": spec.model,
        "data": suite.data,
        "batch_size": spec.batch_size,
        "images": spec.images,
        "seeds": spec.seeds,
        "restarts": spec.restarts,
        "steps": spec.steps,
        "seed": suite.seed,
        "dry_run": dry_run,
    }
    plans = []
    if spec.against_configurations:
        for config in suite.configurations:
            view, selective = view_of(config)
            plans.append(AttackPlan(view=view, selective=selective, label=config.label, **common))
    for mask in spec.masks:
        for ratio in spec.ratios:
            selective = SelectiveSpec(mask=mask, ratio=ratio, samples=spec.sensitivity_samples)
            plans.append(
                AttackPlan(view="selective", selective=selective, label=f"frontier/{mask}-{ratio:g}", **common)
            )
    return plans


def run_campaign(
    plans: list[AttackPlan],
    writer: ResultWriter,
    out_dir: Path,
    on_result: Callable[[AttackPlan, dict], None] | None = None,
) -> list[dict[str, Any]]:
    """Run every plan; write each record and a summary per plan; save one PNG grid per plan."""
    summaries = []
    for plan in plans:
        records = run_plan(plan, (lambda rec, plan=plan: on_result(plan, rec)) if on_result else None)
        for rec in records:
            writer.write("attack", public(rec))
        grid = None if plan.dry_run else save_grid(records, out_dir / f"{safe_label(plan.name)}.png")
        selective = plan.selective
        summary = {
            "plan": plan.name,
            "attack": plan.attack,
            "view": plan.view,
            "mask": selective.mask if selective else None,
            "ratio": selective.ratio if selective else (1.0 if plan.view == "he" else 0.0),
            "model": plan.model,
            "batch_size": plan.batch_size,
            "images": plan.images,
            "seeds": plan.seeds,
            "restarts": plan.restarts,
            "dry_run": plan.dry_run,
            "grid": str(grid) if grid else None,
            "scores": summarize([public(r) for r in records]),
        }
        writer.write("attack_summary", summary)
        summaries.append(summary)
    return summaries
