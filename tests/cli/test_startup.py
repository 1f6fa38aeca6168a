"""Start-up: commands that do not train import no torch; every subcommand is still reachable and described."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.core import TyperGroup

from hebench.cli.lazy import load_command
from hebench.cli.main import _Commands, app

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "tests" / "fixtures" / "run-offload"


def _imports_torch(code: str) -> bool:
    """Run ``code`` in a fresh interpreter (this checkout first on the path); did it import torch?"""
    probe = f"{code}\nimport sys\nprint('torch imported:', 'torch' in sys.modules)"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, env=env)
    last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    assert last.startswith("torch imported:"), done.stderr
    return last.endswith("True")


def test_importing_the_command_imports_no_torch():
    assert not _imports_torch("import hebench.cli.main")


@pytest.mark.parametrize(
    "args",
    [
        ["--version"],
        ["--help"],
        ["show", str(RUN)],
        ["compare", str(RUN), str(ROOT / "tests" / "fixtures" / "run-v1")],
        ["report", "/nonexistent"],
        ["backends"],
        ["run", "--help"],
        ["datasets", "list"],
    ],
)
def test_commands_that_do_not_train_import_no_torch(args):
    code = "\n".join(["from hebench.cli.main import app", "try:", f"    app({args!r}, standalone_mode=False)"])
    code += "\nexcept BaseException:\n    pass"
    assert not _imports_torch(code)


def test_every_subcommand_loads_and_its_listed_help_is_its_own():
    group = typer.main.get_command(app)
    assert isinstance(group, TyperGroup)
    for name, spec in _Commands.lazy.items():
        command = load_command(name, spec)
        assert command.name == name
        own = (command.help or "").strip().splitlines()[0]
        assert own == spec.help, name


def test_a_mistyped_subcommand_is_suggested():
    from typer.testing import CliRunner

    result = CliRunner().invoke(app, ["tunee"])
    assert result.exit_code == 2 and "Did you mean 'tune'" in result.output


def test_no_module_imports_click_itself():
    """Typer 0.26 and later carry their own click (``typer._click``), whose classes, exceptions and parameter
    sources are not the ``click`` package's: hebench uses Typer's API only, so every Typer its range admits works
    (``nox -s newest`` runs the fast tests with the newest one)."""
    import ast

    found = []
    for path in sorted((ROOT / "hebench").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            names += [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            found += [f"{path.relative_to(ROOT)}:{node.lineno}" for n in names if n.split(".")[0] == "click"]
    assert not found, f"imports of click: {found}"
