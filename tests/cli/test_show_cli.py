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


FIXTURES = RUN.parent


def shown(run: str) -> str:
    result = runner.invoke(app, ["show", str(FIXTURES / run)], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    return result.output


def test_show_counts_dropouts_apart_from_the_uploads():
    # #40: a client that dropped counted as a 134-byte upload (raw@30: 42 kB per client, ranging from 134 B)
    text = shown("run-dropouts")
    raw30 = next(line for line in text.splitlines() if line.lstrip().startswith("raw@30"))
    assert "51.2 kB" in raw30 and "134 B" not in text
    flat = " ".join(text.split())
    assert "counted apart: raw@30 3 of 12, ckks@30 3 of 12, secagg@30 3 of 12" in flat


def test_an_emulated_runs_links_table_is_not_headed_modelled():
    # #40: a userspace-emulated run's links table was headed "(model: modelled, not measured)"
    emulated, modelled = shown("run-links"), shown("run-links-model")
    assert "on the links, per steady round" in emulated and "modelled, not measured" not in emulated
    assert "on the links, per steady round (m: modelled, not measured)" in modelled
    assert " m " in modelled.split("on the links", 1)[1]  # the mark the heading explains


def test_one_round_is_said_the_same_way_in_tables_notes_and_verdicts():
    # #40: with rounds: 1 the note said "no steady round yet" while the verdict said "1 steady round(s) each"
    # under a "min–max over steady rounds" table
    text = " ".join(shown("run-one-round").split())
    assert "steady round(s)" not in text and "over steady rounds" not in text
    assert "spread: min–max over rounds (warm-up included)" in text and "per round (warm-up included)" in text
    assert "no steady round yet, so the figures include the first (warm-up) round" in text
    assert "(1 round(s) each, the first (warm-up) round included: no steady round yet)" in text


def test_show_says_whose_leakage_each_row_is_and_explains_a_vifp_above_one(tmp_path):
    # #40: the leakage table was headed "leakage to the aggregator" over an outside observer's rows, and VIFp 2.93
    # for a failed reconstruction at SSIM 0.05 went unexplained
    from dataclasses import replace

    from tests.analysis.test_defended import attacked

    run = shutil.copytree(FIXTURES / "run-one-round", tmp_path / "run")
    noise = attacked("host-he/tenseal-ckks", 0, 4)
    noise = replace(
        noise, scores={**noise.scores, "ssim": {"mean": 0.05, "std": 0.01}, "vifp": {"mean": 2.93, "std": 0.4}}
    )
    observer = replace(attacked("raw", 4, 4, 0.0, "raw"), plan="raw/observer", adversary="observer", config="raw")
    with (run / "results.jsonl").open("a") as fh:
        for rec in (attacked("raw", 4, 4, 0.0, "raw"), noise):
            fh.write(json.dumps({"schema": "hebench.results/2", "time": 0.0, **rec.to_json()}) + "\n")
    aggregator_only = " ".join(runner.invoke(app, ["show", str(run)], env={"COLUMNS": "80"}).output.split())
    assert "leakage to the aggregator" in aggregator_only
    assert "† VIFp above 1 (host-he/tenseal-ckks 2.93) at SSIM 0.05–0.05" in aggregator_only
    assert "no fidelity" in aggregator_only
    with (run / "results.jsonl").open("a") as fh:
        fh.write(json.dumps({"schema": "hebench.results/2", "time": 0.0, **observer.to_json()}) + "\n")
    both = " ".join(runner.invoke(app, ["show", str(run)], env={"COLUMNS": "80"}).output.split())
    assert "leakage to the aggregator" not in both and "leakage to each plan's adversary" in both
