"""``hebench tune``: the Pareto set of compact HE parameter sets for a suite or a model, measured on this host."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import typer
import yaml
from rich import box
from rich.table import Table

from hebench.cli.common import (
    OutputFormat,
    console,
    given_on_command_line,
    handle_errors,
    print_json,
    progress_bar,
    split_list,
)
from hebench.errors import ParameterError
from hebench.heops.tune import Candidate, Measurement, model_parameters, suite_block, suite_target, tune


def _bits(bits: str, precision: float | None, clip: float) -> list[int]:
    if precision is not None:
        if precision <= 0:
            raise ParameterError("--precision must be positive", "e.g. --precision 1e-4")
        return [max(2, math.ceil(math.log2(clip / precision + 1)) + 1)]  # step clip / (2^(b-1) - 1) <= precision
    try:
        return sorted({int(b) for b in split_list(bits)})
    except ValueError:
        raise ParameterError(f"--bits '{bits}' must be comma-separated integers", "e.g. --bits 8,12,16") from None


def tune_table(results: list[Measurement], title: str) -> Table:
    """The candidates, Pareto set first, in 80 columns: every figure the ★ is decided by is shown."""
    table = Table(title=title, box=box.SIMPLE_HEAD, show_edge=False, collapse_padding=True, title_justify="left")
    for col in ("set", "N", "log q", "up B", "down B", "CPU µs", "stated\nerror", "max\nerror", "★"):
        table.add_column(col, justify="left" if col == "set" else "right", no_wrap=True)
    for m in sorted(results, key=lambda m: (not m.pareto, m.upload_bytes_per_value)):
        within = m.max_abs_error <= m.precision
        table.add_row(
            m.candidate.short,
            str(m.ring_degree or "-"),
            str(m.log_q or "-"),
            f"{m.upload_bytes_per_value:.2f}",
            f"{m.download_bytes_per_value:.2f}",
            f"{m.cpu_s_per_value * 1e6:.3f}",
            f"{m.precision:.1e}",
            f"{m.max_abs_error:.1e}" + ("" if within else "[red]![/]"),
            "★" if m.pareto else "",
        )
    return table


def _given(ctx: typer.Context, name: str) -> bool:
    return given_on_command_line(ctx, name)


@handle_errors
def tune_command(
    ctx: typer.Context,
    suite_file: Path | None = typer.Argument(
        None, metavar="[SUITE]", help="size for this suite: its model, clients per round and their sample counts"
    ),
    model: str | None = typer.Option(None, help="model name (mlp, cnn_dropout, lenet, resnet18), instead of SUITE"),
    parameters: int | None = typer.Option(None, help="parameter count, instead of SUITE or --model"),
    clients: int = typer.Option(2, help="clients per aggregate (with --model or --parameters)"),
    headroom: int | None = typer.Option(
        None, help="max_summands (default: --clients, right for equal sample counts; a SUITE computes it)"
    ),
    bits: str = typer.Option("8,12,16", help="value sizes to try (bits, sign included)"),
    precision: float | None = typer.Option(None, help="target max error per value, instead of --bits"),
    clip: float = typer.Option(1.0, help="values lie in [-clip, clip] (a SUITE's compact clip when it has one)"),
    security: int = typer.Option(128, help="security level: 128, 192 or 256"),
    sample: int = typer.Option(1 << 17, help="values measured per candidate (per-value figures scale)"),
    baseline: bool = typer.Option(True, help="also measure TenSEAL CKKS N=8192 for reference"),
    out: Path | None = typer.Option(None, help="write the Pareto set as suite configurations (YAML)"),
    fmt: OutputFormat = typer.Option(OutputFormat.table, "--format", help="table or json"),
) -> None:
    """Measure candidate compact parameter sets here; print the Pareto set (bytes, CPU, error) and a suite block."""
    if sum(x is not None for x in (suite_file, model, parameters)) != 1:
        raise ParameterError(
            "give exactly one of SUITE, --model and --parameters", "e.g. hebench tune suites/quickstart.yaml"
        )
    if security not in (128, 192, 256):
        raise ParameterError(f"--security {security} is not in the HE standard's table", "use 128, 192 or 256")
    samples = None
    if suite_file is not None:
        for name in ("clients", "headroom"):
            if _given(ctx, name):
                raise ParameterError(
                    f"--{name} is decided by the suite (its clients and their sample counts)",
                    f"drop --{name}, or tune with --model/--parameters instead of a suite",
                )
        from hebench.config import load_suite

        target = suite_target(load_suite(suite_file))
        count, clients, headroom, samples = target.parameters, target.clients, target.headroom, target.samples
        if target.clip is not None and not _given(ctx, "clip"):
            clip = target.clip
        title = f"{target.suite}: {count:,} values, {clients} clients per round, max_summands {headroom}"
    else:
        count = parameters if parameters is not None else model_parameters(str(model))
        headroom = headroom or clients
        title = f"{count:,} values, {clients} clients, max_summands {headroom}"
    sizes = _bits(bits, precision, clip)
    with progress_bar(quiet=fmt is OutputFormat.json) as progress:
        task = progress.add_task("measuring", total=None)

        def on_start(cand: Candidate, total: int) -> None:
            progress.update(task, description=cand.name, total=total)

        def on_done(_: Measurement) -> None:
            progress.advance(task)

        results = tune(
            count,
            clients,
            sizes,
            clip,
            security,
            sample,
            baseline,
            on_start,
            on_done,
            headroom=headroom,
            samples=samples,
        )
    block = suite_block(results)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(yaml.safe_dump(block, sort_keys=False))
    if fmt is OutputFormat.json:
        print_json(
            {
                "parameters": count,
                "clients": clients,
                "max_summands": headroom,
                "samples": list(samples) if samples else None,
                "results": [dataclasses.asdict(m) for m in results],
                "suite": block,
            }
        )
        return
    console.print(tune_table(results, title), highlight=False)
    console.print(
        "[dim]per value: up/down: bytes to/from the aggregator; CPU µs: per client; stated error: the adapter's "
        "guarantee, max error: this sample's. ★ Pareto set over bytes (up + down), CPU and stated error.[/]"
    )
    if samples is not None and headroom > clients:
        console.print(
            f"[dim]max_summands {headroom} is what weights applied at the aggregator need (Flower's strategy); on the "
            f"local runtime each client applies its own FedAvg weight before encrypting, so {clients} suffices "
            "there (docs/protocol.md).[/]"
        )
    if samples is None:
        console.print(
            f"[dim]max_summands {headroom} holds exact FedAvg weights for {headroom} clients with equal sample "
            "counts; unequal counts need more (`hebench tune SUITE` computes it).[/]"
        )
    if out is None:
        console.print(yaml.safe_dump(block, sort_keys=False), highlight=False, markup=False)
    else:
        console.print(f"suite configurations written to {out}")
