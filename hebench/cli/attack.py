"""``hebench attack``: gradient inversion against what the aggregator sees, scored.

Three sources of views: options alone (one ad-hoc view), a suite's privacy section (its configurations and
frontier), or an existing run folder (the views its configurations' aggregators saw, from its records). With a
suite or a run, the options that say how to attack override its privacy section; those that describe a view
are refused, since the views come from the configurations.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from hebench.cli.common import (
    OutputFormat,
    console,
    given_on_command_line,
    handle_run_errors,
    print_json,
    progress_bar,
    split_list,
)
from hebench.cli.render.attacks import attack_table
from hebench.cli.render.legend import label_keys, print_legend
from hebench.errors import ParameterError
from hebench.results.attack_views import View

if TYPE_CHECKING:
    from hebench.inversion.evaluate import AttackPlan

FULL_SUITE = "privacy-full"  # a shipped suite


# option (parameter name) -> the privacy field it sets when attacking a suite or a run
HOW_TO_ATTACK = {
    "attack_name": "attack",
    "model": "model",
    "batch_size": "batch_sizes",
    "images": "images",
    "seeds": "seeds",
    "restarts": "restarts",
    "steps": "steps",
    "workers": "workers",
    "device": "device",
    "attacker": "attackers",
    "mask_source": "mask_sources",
}
# options that describe one view: a suite's or a run's views come from its configurations instead
WHAT_WAS_SEEN = {
    "view": "the views are the configurations' (frontier: --set privacy.masks=[random] --set privacy.ratios=[0.1])",
    "mask": "the frontier's masks: --set privacy.masks=[sensitivity]",
    "ratio": "the frontier's ratios: --set privacy.ratios=[0.1]",
    "layers": "layer masks are configurations' selective settings",
    "dataset": "the data are the suite's: --set data.dataset=NAME (a suite file only)",
    "data_path": "--set data.path=DIR",
    "clients": "--set 'privacy.threats=[{clients: 2}]'",
    "local_steps": "--set 'privacy.threats=[{local_steps: 5, local_lr: 0.1}]'",
    "local_lr": "--set 'privacy.threats=[{local_steps: 5, local_lr: 0.1}]'",
    "seed": "the seed decides the victims' data: --set seed=N (a suite file only)",
}
RUN_OVERRIDES = ("privacy.", "data.path=")  # a run's views are fixed: only how to attack (and where its data lie)


def _given(ctx: typer.Context, names: Any) -> list[str]:
    return [n for n in names if given_on_command_line(ctx, n)]


def _option(name: str) -> str:
    return "--" + {"attack_name": "attack", "data_path": "data-path"}.get(name, name).replace("_", "-")


def _privacy_overrides(ctx: typer.Context, values: dict[str, Any]) -> list[str]:
    """``--set`` items for the how-to-attack options given on the command line; a view option is refused."""
    refused = _given(ctx, WHAT_WAS_SEEN)
    if refused:
        name = refused[0]
        raise ParameterError(
            f"{_option(name)} describes a view, and a suite's or run's views come from its configurations",
            f"drop {_option(name)}; {WHAT_WAS_SEEN[name]}; or attack an ad-hoc view without SUITE/RUN",
        )
    out = []
    for name in _given(ctx, HOW_TO_ATTACK):
        value = values[name]
        if name == "batch_size":
            value = [value]
        elif name in ("attacker", "mask_source"):
            value = split_list(value)
        out.append(f"privacy.{HOW_TO_ATTACK[name]}={json.dumps(value)}")
    return out


def _is_run(target: Path) -> bool:
    return target.is_dir() or target.suffix == ".jsonl"


def _is_text(
    ctx: typer.Context, target: Path, set_: list[str], values: dict[str, Any], out: Path | None, fmt: OutputFormat
) -> bool:
    """Attack a language-model suite or run for text (True), or leave ``target`` to the image attacks (False)."""
    from hebench.cli.render.text_attacks import print_text_leakage
    from hebench.cli.text_attack import is_text_target, run_text_attack
    from hebench.results.records import TextAttackSummaryRecord

    if not is_text_target(target, set_):
        return False
    usable = ("attack_name", "batch_size", "images", "mask_source")
    refused = [n for n in _given(ctx, [*WHAT_WAS_SEEN, *HOW_TO_ATTACK]) if n not in usable]
    if refused:
        raise ParameterError(
            f"{_option(refused[0])} does not apply to a language-model suite or run",
            "its views are its configurations'; give --attack span|optimisation, --batch-size, --images (batches), "
            "--mask-source sample,local,global",
        )
    sizes = [values["batch_size"]] if given_on_command_line(ctx, "batch_size") else None
    batches = values["images"] if given_on_command_line(ctx, "images") else None
    attack = values["attack_name"] if given_on_command_line(ctx, "attack_name") else None
    sources = split_list(values["mask_source"]) if given_on_command_line(ctx, "mask_source") else None
    result = run_text_attack(target, set_, sizes, batches, attack, out, sources)
    if fmt is OutputFormat.json:
        print_json(result)
        return True
    print_text_leakage(console, [TextAttackSummaryRecord.from_json(s) for s in result["summaries"]])
    for note in result["notes"]:
        console.print(f"[yellow]note:[/] {note}", highlight=False)
    console.print(f"[dim]{result['wall_s']:.0f} s; records and summaries: {result['out']}[/]", highlight=False)
    return True


def _check_ad_hoc(ctx: typer.Context, values: dict[str, Any]) -> None:
    """Refuse an option the ad-hoc view would not use (rather than ignore it)."""
    view = values["view"]
    if view not in tuple(View):
        raise ParameterError(f"--view '{view}' is not raw, he or selective", "pick one of those")
    unused = []
    if view != "selective":
        selective_only = ("mask", "ratio", "layers", "attacker", "mask_source")
        unused += [(n, "applies to --view selective") for n in _given(ctx, selective_only)]
    elif values["mask"] != "layers":
        unused += [(n, "applies to --mask layers") for n in _given(ctx, ("layers",))]
    if values["local_steps"] is None:
        unused += [(n, "applies with --local-steps") for n in _given(ctx, ("local_lr",))]
    if unused:
        name, why = unused[0]
        raise ParameterError(f"{_option(name)} {why}, so it would be ignored here", f"drop {_option(name)}")


def _ad_hoc_plans(values: dict[str, Any]) -> list[AttackPlan]:
    """One view described by the options (several attackers side by side under selective encryption)."""
    from hebench.config import DataSpec, SelectiveSpec
    from hebench.inversion.evaluate import AttackPlan

    view = values["view"]
    selective = None
    if view == "selective":
        selective = SelectiveSpec(  # type: ignore[arg-type]
            mask=values["mask"], ratio=values["ratio"], layers=tuple(split_list(values["layers"]))
        )
    data = DataSpec(dataset=values["dataset"], clients=values["clients"], path=values["data_path"])  # type: ignore[arg-type]
    attackers = split_list(values["attacker"]) if view == "selective" else ["mask-aware"]
    common = {
        "attack": values["attack_name"],
        "view": view,
        "selective": selective,
        "model": values["model"],
        "data": data,
        "batch_size": values["batch_size"],
        "images": values["images"],
        "seeds": values["seeds"],
        "restarts": values["restarts"],
        "steps": values["steps"],
        "seed": values["seed"],
        "dry_run": values["dry_run"],
        "mask_source": values["mask_source"],
        "local_steps": values["local_steps"],
        "local_lr": values["local_lr"],
        "clients": values["clients"],
        "workers": values["workers"],
        "device": values["device"],
        "engine": values["engine"],
    }
    plans = []
    for who in attackers:
        plan = AttackPlan(attacker=who, **common)  # type: ignore[arg-type]
        label = plan.name + (f"/{who}" if len(attackers) > 1 or who != "mask-aware" else "")
        plans.append(AttackPlan(attacker=who, label=label, **common))  # type: ignore[arg-type]
    return plans


@handle_run_errors
def attack(
    ctx: typer.Context,
    target: Path | None = typer.Argument(
        None,
        metavar="[SUITE|RUN]",
        help="a suite with a privacy section (e.g. suites/privacy.yaml), or a run folder: attack its recorded views",
    ),
    full: bool = typer.Option(
        False, "--full", help="run suites/privacy-full.yaml (the full Fig. 9 grid; hours on 2 cores)"
    ),
    attack_name: str = typer.Option(
        "dlg", "--attack", help="a recipe in attacks/ (dlg, idlg, inverting-gradients, imprint) or a YAML path"
    ),
    view: str = typer.Option("raw", help="what the aggregator sees: raw, he, or selective (no SUITE/RUN)"),
    mask: str = typer.Option("sensitivity", help="selective mask: sensitivity, magnitude, random, layers"),
    ratio: float = typer.Option(0.1, help="selective: fraction of parameters encrypted"),
    layers: str = typer.Option("first,last", help="selective layers mask: names or patterns"),
    attacker: str = typer.Option(
        "mask-aware", help="selective attackers, comma-separated: mask-aware, fedml-he-zeros, fedml-he-noise"
    ),
    mask_source: str = typer.Option(
        "local",
        help="sensitivity from the attacked sample, local data, or global map (comma-separated; a language-model "
        "suite or run: default its text_leakage.mask_sources, global as its run agrees)",
    ),
    model: str = typer.Option("lenet", help="model the victim trains (DLG's sigmoid LeNet by default)"),
    dataset: str = typer.Option("digits", help="digits, natural, cifar10, cifar100, femnist, ..."),
    data_path: str | None = typer.Option(None, help="local dataset folder (femnist, CIFAR pickles)"),
    batch_size: int = typer.Option(1, help="victim batch size (images per client)"),
    local_steps: int | None = typer.Option(None, help="attack the update after E local SGD steps (lr known)"),
    local_lr: float = typer.Option(0.1, help="the victim's local learning rate (with --local-steps)"),
    clients: int = typer.Option(1, help="the attacker sees the FedAvg mean of this many clients' uploads"),
    images: int = typer.Option(4, help="victim batches"),
    seeds: int = typer.Option(2, help="model initialisations per batch"),
    restarts: int = typer.Option(4, help="restarts; the best by the attacker's own gradient loss is kept"),
    steps: int | None = typer.Option(None, help="optimiser steps (default: the attack's own)"),
    workers: int | None = typer.Option(None, help="restart worker processes (default: one per available core)"),
    device: str = typer.Option("auto", help="auto (CUDA when present), cpu or cuda"),
    engine: str = typer.Option(
        "batched", help="batched (restarts optimised together, state per restart) or serial (one at a time)"
    ),
    seed: int = typer.Option(0, help="seed"),
    out: Path | None = typer.Option(
        None, help="folder for attacks.jsonl and PNG grids (default: results/attack; RUN/attack-<date-time> for a run)"
    ),
    set_: list[str] = typer.Option([], "--set", help="override a suite field (a run: privacy.* and data.path only)"),
    dry_run: bool = typer.Option(False, "--dry-run", help="build observations and masks only; no optimisation"),
    fmt: OutputFormat = typer.Option(OutputFormat.table, "--format", help="table or json"),
) -> None:
    """Reconstruct private images from what the aggregator receives, and score the leakage."""
    from hebench.config import load_suite
    from hebench.config.catalog import resolve_suite
    from hebench.inversion.campaign import plans_for, recorded_plans, run_campaign
    from hebench.inversion.evidence import raw_failed_notes, weak_attack_notes
    from hebench.inversion.recipes import load_recipe
    from hebench.results import ResultWriter

    start = time.perf_counter()
    values = dict(ctx.params)
    notes: list[str] = []
    if full:
        if target is not None:
            raise ParameterError("--full runs suites/privacy-full.yaml and takes no SUITE or RUN", "drop one of them")
        target = resolve_suite(FULL_SUITE)
    if target is not None and _is_text(ctx, target, set_, values, out, fmt):
        return
    if target is None:
        _check_ad_hoc(ctx, values)
        plans = _ad_hoc_plans(values)
        out = out or Path("results/attack")
    elif _is_run(target):
        foreign = [item for item in set_ if not item.startswith(RUN_OVERRIDES)]
        if foreign:
            raise ParameterError(
                f"--set {foreign[0]} would change what the run's aggregators saw",
                "a run's views are fixed: --set only privacy.* (how to attack) or data.path (where its data lie)",
            )
        rebuilt = recorded_plans(target, [*set_, *_privacy_overrides(ctx, values)], dry_run)
        plans, notes = rebuilt.plans, rebuilt.notes
        out = out or (target if target.is_dir() else target.parent) / f"attack-{dt.datetime.now():%Y%m%d-%H%M%S}"
    else:
        suite = load_suite(target, [*set_, *_privacy_overrides(ctx, values)])
        if suite.privacy is None:
            raise ParameterError(f"{target} has no privacy section", "add one (see suites/privacy.yaml)")
        plans = plans_for(suite, dry_run)
        out = out or Path("results/attack")
    if not plans:
        raise ParameterError(f"{target} gives no view to attack", "check its configurations and privacy section")
    if target is not None and given_on_command_line(ctx, "engine"):
        plans = [replace(p, engine=engine) for p in plans]
    warnings = weak_attack_notes(plans)
    for plan in plans:
        load_recipe(plan.attack)  # an unknown recipe fails here, before any work
        plan.check()
    total = sum(p.images * p.seeds for p in plans)
    with progress_bar(fmt is OutputFormat.json) as progress:
        task = progress.add_task("attacking", total=total)

        def on_result(plan: AttackPlan, record: dict) -> None:
            ssim = record.get("ssim")
            progress.update(
                task,
                description=f"{plan.name}: image {record['image']} seed {record['seed']}"
                + (f" SSIM {ssim:.2f}" if ssim is not None else ""),
            )
            progress.advance(task)

        with ResultWriter(out / "attacks.jsonl") as writer:
            summaries = run_campaign(plans, writer, out, on_result)
    wall = time.perf_counter() - start
    warnings += raw_failed_notes(summaries)
    models = sorted({p.model for p in plans})
    if fmt is OutputFormat.json:
        print_json(
            {"out": str(out), "wall_s": wall, "models": models, "notes": notes, "warnings": warnings}
            | {"summaries": summaries}
        )
        return
    keys = label_keys([s["plan"] for s in summaries])
    print_legend(console, keys)
    console.print(attack_table(summaries, keys))
    console.print(f"[dim]model attacked: {', '.join(models)}[/]", highlight=False)
    for note in notes:
        console.print(f"[yellow]note:[/] {note}", highlight=False)
    for warning in warnings:
        console.print(f"[yellow]warning:[/] {warning}", highlight=False)
    n = len(plans)
    console.print(
        f"[dim]{n} plan{'' if n == 1 else 's'} in {wall:.0f} s; records and PNG grids (originals above "
        f"reconstructions): {out}[/]",
        highlight=False,
    )
    if target is not None and _is_run(target):
        console.print(f"[dim]report with the run: hebench report {target} {out / 'attacks.jsonl'} -o FILE.html[/]")
