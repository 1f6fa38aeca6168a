"""``hebench report``: a missing or foreign input is refused with one message, and nothing is written."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from hebench.cli.main import app

runner = CliRunner()


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("nonexistent", None, "does not exist"),
        ("notes.txt", "a line\n", "not a hebench results file"),
        ("other.jsonl", '{"a": 1}\n', "holds no hebench records"),
        ("empty.jsonl", "", "holds no hebench records"),
        ("folder", "", "without results.jsonl"),
    ],
)
def test_report_refuses_missing_or_foreign_input(tmp_path, name, content, message):
    source, output = tmp_path / name, tmp_path / "x.html"
    if name == "folder":
        source.mkdir()
    elif content is not None:
        source.write_text(content)
    result = runner.invoke(app, ["report", str(source), "-o", str(output)])
    assert result.exit_code == 2, result.output
    assert message in result.output and "fix:" in result.output and "Traceback" not in result.output
    assert not output.exists() and not (tmp_path / "x_files").exists()


def test_report_never_overwrites_an_existing_file_unless_forced(tmp_path, monkeypatch):
    # #40: `hebench report -o EXISTING.html` overwrote silently (a report with attacks was lost this way)
    from pathlib import Path

    run = Path(__file__).resolve().parents[1] / "fixtures" / "run-one-round"
    kept = tmp_path / "kept.html"
    kept.write_text("a report with attacks")
    refused = runner.invoke(app, ["report", str(run), "-o", str(kept)])
    assert refused.exit_code == 2 and "already exists" in refused.output and "--force" in refused.output
    assert kept.read_text() == "a report with attacks" and not (tmp_path / "kept_files").exists()
    forced = runner.invoke(app, ["report", str(run), "-o", str(kept), "--force"])
    assert forced.exit_code == 0, forced.output
    assert kept.read_text().startswith("<!doctype html>")
    monkeypatch.chdir(tmp_path)  # the default name: reports/report.html, then the next free name beside it
    (tmp_path / "reports").mkdir()
    (tmp_path / "reports" / "report.html").write_text("an earlier report")
    default = runner.invoke(app, ["report", str(run)])
    assert default.exit_code == 0, default.output
    assert (tmp_path / "reports" / "report.html").read_text() == "an earlier report"
    assert (tmp_path / "reports" / "report-2.html").exists() and "report-2.html" in default.output
