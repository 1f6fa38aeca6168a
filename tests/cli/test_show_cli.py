"""``hebench show RUN``: the summary a run prints, again, from its records; the folder is left as it was."""

from __future__ import annotations

import hashlib
import io
import json
import shutil

from rich.console import Console
from typer.testing import CliRunner

from hebench.analysis.summary import summarize_run
from hebench.cli.main import app
from hebench.cli.render.summary import print_summary
from hebench.results import read_records
from tests.results.runs import RUN

runner = CliRunner()


def _state(folder) -> dict[str, tuple[str, int]]:
    """Every file under ``folder``: content hash and modification time."""
    return {
        str(p.relative_to(folder)): (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def test_show_prints_the_runs_summary_and_changes_nothing(tmp_path):
    run = shutil.copytree(RUN, tmp_path / "run")
    before = _state(run)
    result = runner.invoke(app, ["show", str(run)], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    expected = io.StringIO()
    print_summary(Console(file=expected, width=80), summarize_run(read_records(run / "results.jsonl").records))
    for line in expected.getvalue().splitlines()[:12]:  # the run's own summary tables, as `hebench run` prints them
        assert line.rstrip() in result.output
    assert f"records: {run / 'results.jsonl'}" in result.output
    assert _state(run) == before  # no record appended, no file written


def test_show_json_has_every_configuration():
    result = runner.invoke(app, ["show", str(RUN), "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [r["config"] for r in data["summary"]] == ["raw", "host-he/tenseal-ckks", "offload/tenseal-ckks"]
    assert data["results"].endswith("results.jsonl")


def test_show_refuses_what_is_not_a_run(tmp_path):
    missing = runner.invoke(app, ["show", str(tmp_path / "nope")])
    assert missing.exit_code == 2 and "does not exist" in missing.output and "Traceback" not in missing.output
    (tmp_path / "notes.txt").write_text("hello\n")
    foreign = runner.invoke(app, ["show", str(tmp_path / "notes.txt")])
    assert foreign.exit_code == 2 and "not a hebench results file" in foreign.output
