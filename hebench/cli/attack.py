"""``hebench attack``: gradient inversion against what the aggregator sees, scored."""

from __future__ import annotations

import time
from pathlib import Path

import typer
from rich import box
from rich.table import Table

from hebench.cli.common import OutputFormat, console, handle_errors, print_json, progress_bar, split_list
from hebench.cli.legend import label_keys, print_legend
from hebench.errors import ParameterError
from hebench.inversion.campaign import plans_for, run_campaign
from hebench.inversion.evaluate import AttackPlan
from hebench.inversion.recipes import load_recipe
from hebench.results import ResultWriter
from hebench.suite import DataSpec, SelectiveSpec, load_suite

FULL_SUITE = Path(__file__).resolve().parents[2] / "suites" / "privacy-full.yaml"


def _score(summary: dict, metric: str, spec: str = ".2f") -> str:
    s = summary["scores"].get(metric)
    return "-" if s is None else f"{s['mean']:{spec}}±{s['std']:{spec}}"


def _success(summary: dict) -> str:
    s = summary["scores"].get("success")
    if not s:
        return "-"
    return f"{s['k']}/{s['n']} {100 * s['low']:.0f}–{100 * s['high']:.0f}%"


def attack_table(summaries: list[dict], keys: dict[str, str] | None = None) -> Table:
    """Leakage per attack plan, narrow enough for 80 columns; ``keys`` shortens long plan labels (legend)."""
    keys = keys if keys is not None else label_keys([s["plan"] for s in summaries])
    threshold = next((s["scores"]["success"]["threshold"] for s in summaries if "success" in s["scores"]), None)
    recovered = "recovered" + (f"\nSSIM≥{threshold:g}" if threshold is not None else "")
    table = Table(
        title="leakage to the aggregator: mean±std over images × seeds, best of restarts; recovered: k/n, 95% CI",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
        title_justify="left",
    )
    table.add_column("view", no_wrap=True)
    for col in ("encr.", recovered, "SSIM", "PSNR dB", "UQI", "VIFp", "label\nacc"):
        table.add_column(col, justify="right", no_wrap=True)
    for s in summaries:
        table.add_row(
            keys.get(s["plan"], s["plan"]),
            f"{100 * s['ratio']:.0f}%",
            _success(s),
            _score(s, "ssim"),
            _score(s, "psnr", ".0f"),
            _score(s, "uqi"),
            _score(s, "vifp"),
            _score(s, "label_accuracy", ".1f"),
        )
    return table


@handle_errors
def attack(
    suite_file: Path | None = typer.Argument(None, help="a suite with a privacy section (e.g. suites/privacy.yaml)"),
    full: bool = typer.Option(
        False, "--full", help="run suites/privacy-full.yaml (the full Fig. 9 grid; hours on 2 cores)"
    ),
    attack_name: str = typer.Option(
        "dlg", "--attack", help="a recipe in attacks/ (dlg, idlg, inverting-gradients) or a YAML path"
    ),
    view: str = typer.Option("raw", help="what the aggregator sees: raw, he, or selective"),
    mask: str = typer.Option("sensitivity", help="selective mask: sensitivity, magnitude, random, layers"),
    ratio: float = typer.Option(0.1, help="selective: fraction of parameters encrypted"),
    layers: str = typer.Option("first,last", help="selective layers mask: names or patterns"),
    attacker: str = typer.Option(
        "mask-aware", help="selective attackers, comma-separated: mask-aware, fedml-he-zeros, fedml-he-noise"
    ),
    mask_source: str = typer.Option("local", help="sensitivity from the attacked sample, local data, or global map"),
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
    seed: int = typer.Option(0, help="seed"),
    out: Path = typer.Option(Path("results/attack"), help="folder for attacks.jsonl and PNG grids"),
    set_: list[str] = typer.Option([], "--set", help="override a suite field"),
    dry_run: bool = typer.Option(False, "--dry-run", help="build observations and masks only; no optimisation"),
    fmt: OutputFormat = typer.Option(OutputFormat.table, "--format", help="table or json"),
) -> None:
    """Reconstruct private images from what the aggregator receives, and score the leakage."""
    start = time.perf_counter()
    if full:
        if suite_file is not None:
            raise ParameterError("--full runs suites/privacy-full.yaml and takes no suite file", "drop one of them")
        suite_file = FULL_SUITE
    if suite_file is not None:
        suite = load_suite(suite_file, set_)
        if suite.privacy is None:
            raise ParameterError(f"{suite_file} has no privacy section", "add one (see suites/privacy.yaml)")
        plans = plans_for(suite, dry_run)
    else:
        if view not in ("raw", "he", "selective"):
            raise ParameterError(f"--view '{view}' is not raw, he or selective", "pick one of those")
        selective = None
        if view == "selective":
            selective = SelectiveSpec(mask=mask, ratio=ratio, layers=tuple(split_list(layers)))  # type: ignore[arg-type]
        data = DataSpec(dataset=dataset, clients=clients, path=data_path)  # type: ignore[arg-type]
        attackers = split_list(attacker) if view == "selective" else ["mask-aware"]
        common = {
            "attack": attack_name,
            "view": view,
            "selective": selective,
            "model": model,
            "data": data,
            "batch_size": batch_size,
            "images": images,
            "seeds": seeds,
            "restarts": restarts,
            "steps": steps,
            "seed": seed,
            "dry_run": dry_run,
            "mask_source": mask_source,
            "local_steps": local_steps,
            "local_lr": local_lr,
            "clients": clients,
            "workers": workers,
            "device": device,
        }
        plans = []
        for who in attackers:
            plan = AttackPlan(attacker=who, **common)  # type: ignore[arg-type]
            label = plan.name + (f"/{who}" if len(attackers) > 1 or who != "mask-aware" else "")
            plans.append(AttackPlan(attacker=who, label=label, **common))  # type: ignore[arg-type]
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
    if fmt is OutputFormat.json:
        print_json({"out": str(out), "wall_s": wall, "summaries": summaries})
        return
    keys = label_keys([s["plan"] for s in summaries])
    print_legend(console, keys)
    console.print(attack_table(summaries, keys))
    console.print(
        f"[dim]{len(plans)} plans in {wall:.0f} s; records and PNG grids (originals above reconstructions): {out}[/]"
    )
