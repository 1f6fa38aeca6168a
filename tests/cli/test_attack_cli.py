from __future__ import annotations

import json

import pytest
import yaml
from typer.testing import CliRunner

from hebench.cli.main import app

pytestmark = pytest.mark.slow  # attack optimisation through the CLI

runner = CliRunner()


def test_attack_flags_dry_run_json(tmp_path):
    result = runner.invoke(
        app,
        [
            "attack",
            "--view",
            "selective",
            "--mask",
            "random",
            "--ratio",
            "0.5",
            "--images",
            "1",
            "--seeds",
            "1",
            "--dry-run",
            "--out",
            str(tmp_path),
            "--format",
            "json",
        ],
    )
    assert result.exit_code == 0, result.output
    (summary,) = json.loads(result.stdout)["summaries"]
    assert summary["plan"] == "selective/random-0.5" and summary["dry_run"]
    assert (tmp_path / "attacks.jsonl").exists()


def test_attack_from_a_suite_writes_scores_and_grids(tmp_path):
    suite = {
        "name": "p",
        "data": {"dataset": "digits", "clients": 2},
        "configurations": [{"mode": "raw"}],
        "privacy": {"images": 1, "seeds": 1, "restarts": 1, "steps": 5, "masks": ["random"], "ratios": [0.5]},
    }
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(suite))
    result = runner.invoke(app, ["attack", str(path), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert "leakage to the aggregator" in result.output
    assert (tmp_path / "out" / "raw.png").exists() and (tmp_path / "out" / "frontier_random-0.5.png").exists()


def test_attack_bad_inputs(tmp_path):
    assert runner.invoke(app, ["attack", "--view", "sideways"]).exit_code == 2
    bad = tmp_path / "s.yaml"
    bad.write_text(yaml.safe_dump({"name": "x", "configurations": [{"mode": "raw"}]}))
    result = runner.invoke(app, ["attack", str(bad)])
    assert result.exit_code == 2 and "no privacy section" in result.output
