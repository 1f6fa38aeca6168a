"""``hebench compare libraries``: per-operation HE costs on this host."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from hebench.bench.libraries import DEFAULT_ADAPTERS, DEFAULT_SIZES, calibration, compare
from hebench.cli.common import OutputFormat, console, handle_errors, parse_assignments, print_json, split_list
from hebench.crypto.registry import status
from hebench.errors import ParameterError
from hebench.measure.environment import capture
from hebench.results import ResultWriter

app = typer.Typer(help="Compare HE libraries and parameter sets on this host.", no_args_is_help=True)


def _us(seconds: float) -> str:
    us = seconds * 1e6
    return f"{us:,.3g}" if us < 1000 else f"{us:,.0f}"


def _time_table(results: list[dict]) -> Table:
    table = Table(title="µs per value (median wall time; CPU time in --format json)")
    for col in ("adapter", "values", "encrypt", "decrypt", "add", "×plain", "serialize", "deserialize"):
        table.add_column(col, justify="left" if col == "adapter" else "right")
    for r in results:
        ops = r["operations"]
        cells = []
        for name in ("encrypt", "decrypt", "add", "multiply_plain", "serialize", "deserialize"):
            flag = "[yellow]![/]" if ops[name]["wall_s"]["unstable"] else ""
            cells.append(_us(ops[name]["wall_s_per_value"]) + flag)
        values = f"{r['size']:,}" + ("*" if r["extrapolated"] else "")
        table.add_row(r["adapter"], values, *cells)
    return table


def _size_table(results: list[dict]) -> Table:
    table = Table(title="bytes, keys, precision, memory")
    for col in (
        "adapter",
        "values",
        "sec bits",
        "slots",
        "B/value",
        "×f32",
        "keygen s",
        "pk+ctx MB",
        "max err",
        "RSS MiB",
    ):
        table.add_column(col, justify="left" if col == "adapter" else "right")
    for r in results:
        err, b = r["error"], r["bytes"]
        mark = "[green]✓[/]" if err["within_precision"] else "[red]✗[/]"
        table.add_row(
            r["adapter"],
            f"{r['size']:,}",
            str(r["info"]["security_bits"]),
            str(r["info"]["slots"]),
            f"{b['fresh_per_value']:.1f}",
            f"{b['expansion_over_float32']:.1f}",
            f"{r['operations']['keygen']['wall_s']['median']:.3f}",
            f"{b['public_keys'] / 1e6:.2f}",
            f"{err['max_abs']:.1e}{mark}",
            f"{r['peak_rss_bytes'] / 2**20:.0f}",
        )
    return table


@app.command("libraries")
@handle_errors
def libraries(
    adapters: str = typer.Option(
        ",".join(DEFAULT_ADAPTERS), help="comma-separated adapter names (see `hebench backends`)"
    ),
    sizes: str = typer.Option(",".join(map(str, DEFAULT_SIZES)), help="comma-separated vector sizes"),
    param: list[str] = typer.Option([], "--param", "-p", help="adapter parameter, e.g. paillier.key_bits=2048"),
    threads: int = typer.Option(1, help="threads per library (OMP/MKL variables and the library's own setting)"),
    repeats: int = typer.Option(5, help="timed repetitions per operation"),
    budget: float = typer.Option(20.0, help="seconds per operation before measuring a prefix and extrapolating"),
    clients: int = typer.Option(3, help="vectors in the weighted-sum precision check"),
    out: Path | None = typer.Option(None, help="append JSON lines here (kept on failure)"),
    calibration_out: Path | None = typer.Option(None, help="write this host's per-operation costs (for projections)"),
    fmt: OutputFormat = typer.Option(OutputFormat.table, "--format", help="table or json"),
) -> None:
    """Benchmark keygen, encrypt, serialize, add, plaintext multiply and decrypt per adapter."""
    names = split_list(adapters)
    try:
        size_list = [int(s) for s in split_list(sizes)]
    except ValueError:
        raise ParameterError(
            f"--sizes '{sizes}' must be comma-separated integers", "e.g. --sizes 4096,1206590"
        ) from None
    params = parse_assignments(param, "--param")
    for name in params:
        if name not in names:
            raise ParameterError(f"--param names adapter '{name}', which is not in --adapters", "add it to --adapters")
    for name in names:
        st = status(name)  # unknown adapters raise here, before any work
        if not st.available:
            console.print(f"[yellow]skipping {name}[/]: {st.reason} (install: {st.install_hint})")
    names = [n for n in names if status(n).available]

    environment = capture()
    writer = ResultWriter(out) if out else None
    if writer:
        writer.write("environment", {"environment": environment, "command": "compare libraries"})
    results: list[dict] = []
    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
        console=console,
        transient=True,
        disable=fmt is OutputFormat.json,
    ) as progress:
        task = progress.add_task("measuring", total=len(names) * len(size_list))

        def on_start(name: str, size: int) -> None:
            progress.update(task, description=f"{name} × {size:,}")

        def on_result(record: dict) -> None:
            results.append(record)
            if writer:
                writer.write("library_benchmark", {"result": record})
            progress.advance(task)

        try:
            compare(
                names,
                size_list,
                params,
                threads=threads,
                repeats=repeats,
                budget_s=budget,
                clients=clients,
                on_result=on_result,
                on_start=on_start,
            )
        finally:
            if writer:
                writer.close()
    if calibration_out:
        calibration_out.parent.mkdir(parents=True, exist_ok=True)
        calibration_out.write_text(json.dumps(calibration(results, environment), indent=2))
    if fmt is OutputFormat.json:
        print_json({"environment": environment, "results": results})
        return
    console.print(_time_table(results))
    console.print(_size_table(results))
    if any(r["extrapolated"] for r in results):
        console.print("[dim]* measured on a prefix of whole ciphertexts (see measured_values); costs are per value[/]")
    if any(m["wall_s"]["unstable"] for r in results for m in r["operations"].values()):
        console.print("[yellow]![/] unstable: spread above 10 % of the median; rerun on a quieter machine")
    cyc = environment["cycles"]
    console.print(f"[dim]cycles: {'perf_event' if cyc['available'] else 'not recorded — ' + cyc['reason']}[/]")
