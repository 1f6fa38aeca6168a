"""``hebench tune``: the Pareto set of compact HE parameter sets for a model, measured on this host."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import typer
import yaml
from rich.table import Table

from hebench.bench.tune import Candidate, Measurement, model_parameters, suite_block, tune
from hebench.cli.common import OutputFormat, console, handle_errors, print_json, progress_bar, split_list
from hebench.errors import ParameterError


def _bits(bits: str, precision: float | None, clip: float) -> list[int]:
    if precision is not None:
        if precision <= 0:
            raise ParameterError("--precision must be positive", "e.g. --precision 1e-4")
        return [max(2, math.ceil(math.log2(clip / precision + 1)) + 1)]  # step clip / (2^(b-1) - 1) <= precision
    try:
        return sorted({int(b) for b in split_list(bits)})
    except ValueError:
        raise ParameterError(f"--bits '{bits}' must be comma-separated integers", "e.g. --bits 8,12,16") from None


def _table(results: list[Measurement], parameters: int, clients: int) -> Table:
    table = Table(title=f"{parameters:,} values, {clients} clients: per value, per client (★ Pareto)")
    for col in ("set", "N", "log q", "up B", "down B", "µs", "max err", ""):
        table.add_column(col, justify="left" if col == "set" else "right")
    for m in sorted(results, key=lambda m: (not m.pareto, m.upload_bytes_per_value)):
        within = m.max_abs_error <= m.precision
        table.add_row(
            m.candidate.name,
            str(m.ring_degree or "-"),
            str(m.log_q or "-"),
            f"{m.upload_bytes_per_value:.2f}",
            f"{m.download_bytes_per_value:.2f}",
            f"{m.cpu_s_per_value * 1e6:.3f}",
            f"{m.max_abs_error:.1e}" + ("" if within else "[red]![/]"),
            "★" if m.pareto else "",
        )
    return table


@handle_errors
def tune_command(
    model: str | None = typer.Option(None, help="model name (mlp, cnn_dropout, lenet, resnet18)"),
    parameters: int | None = typer.Option(None, help="parameter count, instead of --model"),
    clients: int = typer.Option(2, help="clients per aggregate"),
    headroom: int | None = typer.Option(
        None, help="weight headroom (default: --clients; unequal sample counts need their total)"
    ),
    bits: str = typer.Option("8,12,16", help="value sizes to try (bits, sign included)"),
    precision: float | None = typer.Option(None, help="target max error per value, instead of --bits"),
    clip: float = typer.Option(1.0, help="values lie in [-clip, clip]"),
    security: int = typer.Option(128, help="security level: 128, 192 or 256"),
    sample: int = typer.Option(1 << 17, help="values measured per candidate (per-value figures scale)"),
    baseline: bool = typer.Option(True, help="also measure TenSEAL CKKS N=8192 for reference"),
    out: Path | None = typer.Option(None, help="write the Pareto set as suite configurations (YAML)"),
    fmt: OutputFormat = typer.Option(OutputFormat.table, "--format", help="table or json"),
) -> None:
    """Measure candidate compact parameter sets here; print the Pareto set (bytes, CPU, error) and a suite block."""
    if (model is None) == (parameters is None):
        raise ParameterError("give exactly one of --model and --parameters", "e.g. --model cnn_dropout --clients 2")
    if security not in (128, 192, 256):
        raise ParameterError(f"--security {security} is not in the HE standard's table", "use 128, 192 or 256")
    count = parameters if parameters is not None else model_parameters(str(model))
    sizes = _bits(bits, precision, clip)
    with progress_bar(quiet=fmt is OutputFormat.json) as progress:
        task = progress.add_task("measuring", total=None)

        def on_start(cand: Candidate, total: int) -> None:
            progress.update(task, description=cand.name, total=total)

        def on_done(_: Measurement) -> None:
            progress.advance(task)

        results = tune(count, headroom or clients, sizes, clip, security, sample, baseline, on_start, on_done)
    block = suite_block(results)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(yaml.safe_dump(block, sort_keys=False))
    if fmt is OutputFormat.json:
        print_json({"parameters": count, "results": [dataclasses.asdict(m) for m in results], "suite": block})
        return
    console.print(_table(results, count, clients))
    console.print("[dim]up/down: bytes/value to/from the aggregator; µs: CPU/value/client[/]")
    if out is None:
        console.print(yaml.safe_dump(block, sort_keys=False), highlight=False, markup=False)
    else:
        console.print(f"suite configurations written to {out}")
