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
    assert f"report: {out / 'report.html'}" in first.output  # the report goes into the run folder
    first_report = (out / "report.html").read_bytes()
    again = runner.invoke(app, ["run", str(suite), "--out", str(out)])
    assert again.exit_code != 0 and "--resume" in again.output
    more = runner.invoke(
        app, ["run", str(suite), "--out", str(out), "--resume", "--set", "training.rounds=2", "--format", "json"]
    )
    assert more.exit_code == 0, more.output
    data = json.loads(more.stdout)
    assert data["summary"][0]["rounds_done"] == 2
    assert data["report"] == str(out / "report-2.html") and "is kept" in data["report_note"]  # never overwritten
    assert (out / "report.html").read_bytes() == first_report and (out / "report-2.html").exists()
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


def test_report_path_is_chosen_with_report_and_never_overwritten(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    suite = str(write_suite(tmp_path, SUITE))
    result = runner.invoke(app, ["run", suite, "--out", "out", "--report", "mine.html"])
    assert result.exit_code == 0, result.output
    html = (tmp_path / "mine.html").read_text()
    assert "Costs per mode" in html and (tmp_path / "mine_files" / "run0-costs.csv").exists()
    assert not (tmp_path / "reports").exists() and not (tmp_path / "out" / "report.html").exists()
    again = runner.invoke(app, ["run", suite, "--out", "out2", "--report", "mine.html"])
    assert again.exit_code == 2 and "already exists" in again.output
    assert not (tmp_path / "out2" / "results.jsonl").exists()  # refused before running
    both = runner.invoke(app, ["run", suite, "--out", "out3", "--report", "x.html", "--no-report"])
    assert both.exit_code == 2 and "contradict" in both.output


def test_resume_needs_the_run_folder(tmp_path):
    result = runner.invoke(app, ["run", str(write_suite(tmp_path, SUITE)), "--resume"])
    assert result.exit_code == 2 and "--out" in result.output
