"""``hebench tune``: the Pareto table, a suite block that validates, and clear errors."""

from __future__ import annotations

import json

import pytest
import yaml
from typer.testing import CliRunner

from hebench.cli.main import app
from hebench.suite import parse_suite
from tests.conftest import INSTALLED

pytestmark = pytest.mark.skipif("seal-bfv" not in INSTALLED, reason="TenSEAL not installed")
runner = CliRunner()
SMALL = ["tune", "--parameters", "5000", "--clients", "3", "--bits", "8,16", "--sample", "5000", "--no-baseline"]


def test_tune_writes_a_pareto_suite_block_that_validates(tmp_path):
    out = tmp_path / "params.yaml"
    result = runner.invoke(app, [*SMALL, "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "★" in result.stdout and "seal-bfv 8-bit" in result.stdout
    block = yaml.safe_load(out.read_text())
    assert block["configurations"] and all(c["params"]["max_summands"] == 3 for c in block["configurations"])
    suite = parse_suite({"name": "tuned", "configurations": [{"mode": "raw"}, *block["configurations"]]})
    assert {c.adapter for c in suite.configurations} <= {"plain", "seal-bfv", "seal-ckks"}


def test_tune_json_reports_every_candidate_within_its_stated_precision():
    result = runner.invoke(app, [*SMALL, "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["parameters"] == 5000 and len(data["results"]) >= 3
    assert all(r["max_abs_error"] <= r["precision"] for r in data["results"])
    assert any(r["pareto"] for r in data["results"])
    packed = [r for r in data["results"] if r["candidate"]["adapter"] == "seal-bfv" and r["values_per_slot"] > 1]
    assert packed and min(r["upload_bytes_per_value"] for r in packed) < 4.0  # below float32


def test_tune_needs_exactly_one_target():
    result = runner.invoke(app, ["tune", "--model", "mlp", "--parameters", "10"])
    assert result.exit_code == 2 and "exactly one" in result.output
    result = runner.invoke(app, ["tune", "--parameters", "10", "--security", "100"])
    assert result.exit_code == 2 and "standard" in result.output
