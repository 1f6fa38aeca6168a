"""`hebench run --check SUITE`: the suite validated and a rough time estimate printed, nothing run or written."""

from __future__ import annotations

import json

import yaml
from typer.testing import CliRunner

from hebench.cli.main import app
from hebench.cli.run import rough_duration

runner = CliRunner()
SUITE = {
    "name": "tiny",
    "data": {"dataset": "digits", "clients": 2},
    "model": {"name": "mlp", "hidden": 4},
    "training": {"rounds": 2},
    "configurations": [{"mode": "raw"}, {"name": "again", "mode": "raw"}],
}


def test_check_validates_and_estimates_without_running(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "suite.yaml"
    path.write_text(yaml.safe_dump(SUITE))
    result = runner.invoke(app, ["run", str(path), "--check"])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "valid: 2 configuration(s), 2 clients (2 per round), 2 round(s), mlp with 3,190 parameters" in text
    assert "rough time estimate: about" in text and "1. raw" in text and "2. again" in text and "how: rough" in text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["suite.yaml"]  # no results folder, no report


def test_check_in_json_says_how_it_estimates(tmp_path):
    path = tmp_path / "suite.yaml"
    path.write_text(yaml.safe_dump(SUITE))
    result = runner.invoke(app, ["run", str(path), "--check", "--format", "json"])
    assert result.exit_code == 0, result.output
    found = json.loads(result.output)
    assert found["valid"] is True and found["parameters"] == 3190 and found["rounds"] == 2
    assert [c["label"] for c in found["configurations"]] == ["raw", "again"]
    assert found["total_s"] > 0 and found["how"].startswith("rough")


def test_rough_durations_are_as_precise_as_they_deserve():
    assert [rough_duration(s) for s in (0.2, 42.4, 150, 5000, 9000)] == [
        "about 1 s",
        "about 42 s",
        "about 2 min",
        "about 83 min",
        "about 2.5 h",
    ]


def test_check_is_in_the_help():
    result = runner.invoke(app, ["run", "--help"])
    assert "--check" in result.output and "estimate" in result.output
