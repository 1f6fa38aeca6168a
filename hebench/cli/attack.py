"""``hebench attack``: gradient inversion against what the aggregator sees, scored."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from hebench.cli.common import OutputFormat, console, handle_errors, print_json, progress_bar, split_list
from hebench.errors import ParameterError
from hebench.inversion.campaign import plans_for, run_campaign
from hebench.inversion.evaluate import AttackPlan
from hebench.inversion.recipes import load_recipe
from hebench.results import ResultWriter
from hebench.suite import DataSpec, SelectiveSpec, load_suite


def _score(summary: dict, metric: str, spec: str = ".3f") -> str:
    s = summary["scores"].get(metric)
    return "-" if s is None else f"{s['mean']:{spec}} ± {s['std']:{spec}}"


def attack_table(summaries: list[dict]) -> Table:
    table = Table(title="leakage to the aggregator (mean ± std over images × seeds; best of restarts)")
    table.add_column("view", overflow="fold")
    for col in ("encrypted", "SSIM", "PSNR dB", "UQI", "VIFp", "label acc"):
        table.add_column(col, justify="right")
    for s in summaries:
        table.add_row(
            s["plan"],
            f"{100 * s['ratio']:.0f} %",
            _score(s, "ssim"),
            _score(s, "psnr", ".1f"),
            _score(s, "uqi"),
            _score(s, "vifp"),
            _score(s, "label_accuracy", ".2f"),
        )
    return table


@handle_errors
def attack(
    suite_file: Path | None = typer.Argument(None, help="a suite with a privacy section (e.g. suites/privacy.yaml)"),
    attack_name: str = typer.Option(
        "dlg", "--attack", help="a recipe in attacks/ (dlg, idlg, inverting-gradients) or a YAML path"
    ),
    view: str = typer.Option("raw", help="what the aggregator sees: raw, he, or selective"),
    mask: str = typer.Option("sensitivity", help="selective mask: sensitivity, magnitude, random, layers"),
    ratio: float = typer.Option(0.1, help="selective: fraction of parameters encrypted"),
    layers: str = typer.Option("first,last", help="selective layers mask: names or patterns"),
    model: str = typer.Option("lenet", help="model the victim trains (DLG's sigmoid LeNet by default)"),
    dataset: str = typer.Option("digits", help="digits, femnist, ..."),
    data_path: str | None = typer.Option(None, help="local dataset folder (femnist)"),
    batch_size: int = typer.Option(1, help="victim batch size"),
    images: int = typer.Option(4, help="victim batches"),
    seeds: int = typer.Option(2, help="model initialisations per batch"),
    restarts: int = typer.Option(4, help="restarts; the best by the attacker's own gradient loss is kept"),
    steps: int | None = typer.Option(None, help="optimiser steps (default: the attack's own)"),
    seed: int = typer.Option(0, help="seed"),
    out: Path = typer.Option(Path("results/attack"), help="folder for attacks.jsonl and PNG grids"),
    set_: list[str] = typer.Option([], "--set", help="override a suite field"),
    dry_run: bool = typer.Option(False, "--dry-run", help="build observations and masks only; no optimisation"),
    fmt: OutputFormat = typer.Option(OutputFormat.table, "--format", help="table or json"),
) -> None:
    """Reconstruct private images from what the aggregator receives, and score the leakage."""
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
        data = DataSpec(dataset=dataset, clients=1, path=data_path)  # type: ignore[arg-type]
        plans = [
            AttackPlan(
                attack_name, view, selective, model, data, batch_size, images, seeds, restarts, steps, seed, dry_run
            )
        ]
    for plan in plans:
        load_recipe(plan.attack)  # an unknown recipe fails here, before any work
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
    if fmt is OutputFormat.json:
        print_json({"out": str(out), "summaries": summaries})
        return
    console.print(attack_table(summaries))
    console.print(f"[dim]records and PNG grids (originals above reconstructions): {out}[/]")
