"""A suite run as a user runs it on the simulation engine: ``hebench run SUITE --engine flower-sim``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from typer.testing import CliRunner

from hebench.cli.main import app


def run_on_flower_sim(out: Path, suite: dict[str, Any]) -> tuple[Path, str]:
    """``suite`` written to ``out`` and run on flower-sim into ``out/run``; (the run folder, what it printed)."""
    suite_file = out / "suite.yaml"
    suite_file.write_text(yaml.safe_dump(suite))
    args = ["run", str(suite_file), "--engine", "flower-sim", "--out", str(out / "run"), "--format", "json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    return out / "run", result.output
