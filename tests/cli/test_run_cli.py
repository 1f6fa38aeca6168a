"""`hebench run` through Typer's runner: summary, JSON, resume, failures that keep results."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from hebench.cli.main import app
from hebench.results import read_records

pytestmark = pytest.mark.slow  # end-to-end runs through the CLI

runner = CliRunner()
SUITE = {
    "name": "tiny",
    "data": {"dataset": "digits", "clients": 2},
    "model": {"name": "mlp", "hidden": 4},
    "training": {"rounds": 1},
    "configurations": [{"mode": "raw"}],
}


def write_suite(tmp_path: Path, suite: dict) -> Path:
    path = tmp_path / "suite.yaml"
    path.write_text(yaml.safe_dump(suite))
    return path


def test_run_prints_summary_and_resume_continues(tmp_path):
    suite, out = write_suite(tmp_path, SUITE), tmp_path / "out"
    first = runner.invoke(app, ["run", str(suite), "--out", str(out)])
    assert first.exit_code == 0, first.output
    assert "costs per" in first.output and "raw" in first.output
    assert "raw: round 1/1" in first.output  # CliRunner is no terminal: one progress line per round
    again = runner.invoke(app, ["run", str(suite), "--out", str(out)])
    assert again.exit_code != 0 and "--resume" in again.output
    more = runner.invoke(
        app, ["run", str(suite), "--out", str(out), "--resume", "--set", "training.rounds=2", "--format", "json"]
    )
    assert more.exit_code == 0, more.output
    summary = json.loads(more.stdout)["summary"]
    assert summary[0]["rounds_done"] == 2
    rounds = [r.round for r in read_records(out / "results.jsonl", kind="round").records]
    assert rounds == [0, 1]  # round 0 was not re-run


def test_a_failing_configuration_keeps_completed_ones(tmp_path):
    bad = {
        **SUITE,
        "configurations": [
            {"mode": "raw"},
            {"mode": "host-he", "adapter": "paillier", "params": {"key_bits": 2048, "clip": 1e-3}},
        ],
    }
    out = tmp_path / "out"
    result = runner.invoke(app, ["run", str(write_suite(tmp_path, bad)), "--out", str(out)])
    assert result.exit_code == 4, result.output
    assert "clip" in result.output and "Traceback" not in result.output
    done = read_records(out / "results.jsonl", kind="round").records
    assert [(r.config, r.round) for r in done] == [("raw", 0)]


def test_malformed_suite_exit_code(tmp_path):
    result = runner.invoke(app, ["run", str(write_suite(tmp_path, {"name": "x"}))])
    assert result.exit_code == 2 and "configurations" in result.output


def test_datasets_list():
    result = runner.invoke(app, ["datasets", "list"])
    assert result.exit_code == 0 and "digits" in result.output and "femnist" in result.output


def test_run_with_report_writes_the_html(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["run", str(write_suite(tmp_path, SUITE)), "--out", "out", "--report"])
    assert result.exit_code == 0, result.output
    html = (tmp_path / "reports" / "tiny.html").read_text()
    assert "Costs per mode" in html and (tmp_path / "reports" / "tiny_files" / "run0-costs.csv").exists()


def test_resume_needs_the_run_folder(tmp_path):
    result = runner.invoke(app, ["run", str(write_suite(tmp_path, SUITE)), "--resume"])
    assert result.exit_code == 2 and "--out" in result.output
