"""The ``hebench`` command: every subcommand is imported only when it runs (see :mod:`hebench.cli.lazy`)."""

from __future__ import annotations

from typing import ClassVar

import typer

from hebench import __version__
from hebench.cli.lazy import LazyCommand, LazyGroup


class _Commands(LazyGroup):
    # --help lists them in this order; each help is the first line of the command's own
    lazy: ClassVar[dict[str, LazyCommand]] = {
        "backends": LazyCommand(
            "hebench.cli.backends",
            "backends",
            "List HE adapters: version, scheme, and for unavailable ones why and how to install.",
        ),
        "compare": LazyCommand(
            "hebench.cli.compare",
            "app",
            "Compare two runs (hebench compare RUN_A RUN_B), or HE libraries on this host (hebench compare libraries).",
        ),
        "run": LazyCommand(
            "hebench.cli.run", "run", "Run every configuration of a suite with the same data, seed and initial model."
        ),
        "suites": LazyCommand(
            "hebench.cli.suites",
            "suites",
            "List the shipped suites (run one with hebench run NAME): what each is and how big a run.",
        ),
        "show": LazyCommand(
            "hebench.cli.show", "show", "Print a finished run's summary tables again, from its records alone."
        ),
        "datasets": LazyCommand("hebench.cli.datasets", "app", "List and fetch datasets."),
        "engine": LazyCommand(
            "hebench.cli.engine", "app", "Offload engines: the party that holds the keys, as a SmartNIC/DPU would."
        ),
        "flower": LazyCommand("hebench.cli.flower", "app", "Run hebench on Flower's deployment engine."),
        "attack": LazyCommand(
            "hebench.cli.attack",
            "attack",
            "Reconstruct private images from what the aggregator receives, and score the leakage.",
        ),
        "report": LazyCommand(
            "hebench.cli.report",
            "report",
            "Write an offline HTML report (figures inline; PNG, SVG and CSV beside it).",
        ),
        "tune": LazyCommand(
            "hebench.cli.tune",
            "tune_command",
            "Measure candidate compact parameter sets here; print the Pareto set (bytes, CPU, error) and a suite "
            "block.",
        ),
    }


app = typer.Typer(
    name="hebench",
    cls=_Commands,
    help="Benchmark and evaluate homomorphic encryption for federated learning.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"hebench {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="print the version"),
) -> None:
    """hebench: costs, offload and leakage of HE in federated learning."""


def run() -> None:
    app()
