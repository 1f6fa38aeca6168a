"""The ``hebench`` command."""

from __future__ import annotations

import typer

from hebench import __version__
from hebench.cli import attack, backends, compare, datasets, engine, flower, report, run, tune

app = typer.Typer(
    name="hebench",
    help="Benchmark and evaluate homomorphic encryption for federated learning.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
app.command("backends")(backends.backends)
app.add_typer(compare.app, name="compare")
app.command("run")(run.run)
app.add_typer(datasets.app, name="datasets")
app.add_typer(engine.app, name="engine")
app.add_typer(flower.app, name="flower")
app.command("attack")(attack.attack)
app.command("report")(report.report)
app.command("tune")(tune.tune_command)


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
