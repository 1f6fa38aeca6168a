"""``hebench tune``: the Pareto table, a suite block that validates, and clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from hebench.cli.main import app
from hebench.config import parse_suite
from hebench.errors import PrecisionError
from hebench.heops.tune import Candidate, fedavg_headroom, measure, round_weights
from hebench.results import read_records
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


QUICKSTART = Path(__file__).resolve().parents[2] / "suites" / "quickstart.yaml"


def test_fedavg_headroom_is_the_weights_common_denominator():
    assert fedavg_headroom([480, 479, 479]) == 1438  # the quickstart's clients (README: "need 1438")
    assert fedavg_headroom([10, 10, 10]) == 3  # equal counts: the number of clients
    assert fedavg_headroom([4, 6]) == 5
    assert fedavg_headroom([480, 479, 479], per_round=2) == 959  # the two largest, over the gcd of all


def test_a_headroom_of_the_client_count_fails_on_unequal_samples_and_the_computed_one_holds():
    weights = round_weights(3, [480, 479, 479])
    common = {"bits": 16, "clip": 2.0, "security_level": 128}
    too_small = Candidate("x", "seal-bfv", {**common, "max_summands": 3})
    with pytest.raises(PrecisionError):
        measure(too_small, 256, weights, 2.0)
    enough = measure(Candidate("y", "seal-bfv", {**common, "max_summands": 1438}), 256, weights, 2.0)
    assert enough.max_abs_error <= enough.precision


def test_tune_for_a_suite_writes_a_block_for_its_sample_counts_in_80_columns(tmp_path):
    out = tmp_path / "block.yaml"
    args = ["tune", str(QUICKSTART), "--bits", "16", "--sample", "2000", "--no-baseline", "--out", str(out)]
    result = runner.invoke(app, args, env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    assert "max_summands 1438" in result.output and "stated" in result.output
    assert "…" not in result.output and all(len(line) <= 80 for line in result.output.splitlines()), result.output
    rows = [line for line in result.output.splitlines() if line.lstrip().startswith("seal-")]
    assert rows and not any("N=" in row for row in rows)  # the ring is its own column, never a wrapped name
    block = yaml.safe_load(out.read_text())
    assert all(c["params"]["max_summands"] == 1438 and c["params"]["clip"] == 2.0 for c in block["configurations"])
    suite = yaml.safe_load(QUICKSTART.read_text())
    parse_suite({**suite, "configurations": [*suite["configurations"], *block["configurations"]]})
    refused = runner.invoke(app, ["tune", str(QUICKSTART), "--clients", "3"])
    assert refused.exit_code == 2 and "decided by the suite" in refused.output


@pytest.mark.slow  # one round of each configuration tune wrote, through `hebench run`
def test_the_block_tune_writes_runs_a_round_of_that_suite(tmp_path):
    suite = {
        "name": "tuned",
        "data": {"dataset": "digits", "clients": 3},  # 480, 479 and 479 samples: headroom 1438, not 3
        "model": {"name": "mlp", "hidden": 4},
        "training": {"rounds": 1},
        "configurations": [{"mode": "raw"}],
    }
    path, block = tmp_path / "suite.yaml", tmp_path / "block.yaml"
    path.write_text(yaml.safe_dump(suite))
    tuned = runner.invoke(
        app, ["tune", str(path), "--bits", "16", "--sample", "2000", "--no-baseline", "--out", str(block)]
    )
    assert tuned.exit_code == 0, tuned.output
    configurations = yaml.safe_load(block.read_text())["configurations"]
    assert {c["params"]["max_summands"] for c in configurations} == {1438}
    path.write_text(yaml.safe_dump({**suite, "configurations": configurations[:1]}))
    ran = runner.invoke(app, ["run", str(path), "--out", str(tmp_path / "run"), "--no-report", "--format", "json"])
    assert ran.exit_code == 0, ran.output
    rounds = read_records(tmp_path / "run" / "results.jsonl", kind="round").records
    assert len(rounds) == len(configurations[:1]) and all(r.max_abs_error is not None for r in rounds)
