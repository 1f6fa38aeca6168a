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
