"""Tables at 80 columns: every configuration label whole; `compare RUN_A RUN_B` beside `compare libraries`;
one progress line per round when stdout is not a terminal."""

from __future__ import annotations

import io
import json
import re

from rich.console import Console
from typer.testing import CliRunner

from hebench.cli.common import RoundLines
from hebench.cli.main import app
from hebench.cli.summary import print_summary
from hebench.results import read_records
from hebench.results.summary import summarize_run
from hebench.runtime.runner import RunEvent
from tests.results.runs import RUN, extended_run

FIXTURES = RUN.parent


def _summary_at_80(folder) -> tuple[str, list[str]]:
    rows = summarize_run(read_records(folder / "results.jsonl").records)
    out = io.StringIO()
    print_summary(Console(file=out, width=80), rows, ["a note"])
    return out.getvalue(), [r.config for r in rows]


def test_the_run_summary_fits_80_columns_with_every_label_whole():
    for fixture in ("run-offload", "run-v1", "run-flower"):
        text, labels = _summary_at_80(FIXTURES / fixture)
        assert "…" not in text, text
        assert all(len(line) <= 80 for line in text.splitlines() if not line.startswith("  #")), text
        for label in labels:
            assert re.search(rf"(^|\s){re.escape(label)}(\s|$)", text, re.M), (label, text)
        assert "CPU" in text and "wall" in text and "×" in text


def test_compare_two_runs_at_80_columns(tmp_path):
    a, b = extended_run(tmp_path / "a", 6), extended_run(tmp_path / "b", 6, cpu_factor={"raw": 2.0})
    result = CliRunner().invoke(app, ["compare", str(a), str(b)], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    assert "…" not in result.output
    for label in ("raw", "host-he/tenseal-ckks", "offload/tenseal-ckks"):
        assert f"\n{label}\n" in result.output
    assert "not significant" in result.output and "significant (p=" in result.output
    as_json = CliRunner().invoke(app, ["compare", "runs", str(a), str(b), "--format", "json"])
    assert json.loads(as_json.stdout)["configs"][0]["config"] == "raw"


def test_compare_libraries_still_answers_and_a_missing_run_is_one_error(tmp_path):
    assert CliRunner().invoke(app, ["compare", "libraries", "--help"]).exit_code == 0
    result = CliRunner().invoke(app, ["compare", str(tmp_path / "nope"), str(RUN)])
    assert result.exit_code != 0 and "error:" in result.output and "Traceback" not in result.output


def test_one_line_per_round_when_the_output_is_not_a_terminal():
    out = io.StringIO()
    lines = RoundLines(3, Console(file=out, width=80))
    assert lines.enabled  # a StringIO is no terminal
    lines.show(RunEvent("host-he/tenseal-ckks", None))
    for r in range(3):
        lines.show(RunEvent("host-he/tenseal-ckks", r, {"accuracy": 0.5 + r / 10}))
    text = out.getvalue().splitlines()
    assert len(text) == 4 and "round 3/3" in text[-1] and "accuracy 0.700" in text[-1] and "elapsed" in text[-1]


def test_the_leakage_table_fits_80_columns_with_every_plan_named():
    def summary(plan: str, ratio: float, ssim: float) -> dict:
        scores = {m: {"mean": ssim, "std": 0.25} for m in ("ssim", "uqi", "vifp", "label_accuracy")}
        scores["psnr"] = {"mean": 11.4, "std": 10.4}
        scores["success"] = {"k": 1, "n": 2, "low": 0.09, "high": 0.91, "threshold": 0.6}
        return {"plan": plan, "ratio": ratio, "scores": scores}

    from hebench.cli.attack import attack_table
    from hebench.cli.legend import label_keys, print_legend

    summaries = [summary("raw", 0.0, 0.42), summary("host-he/tenseal-ckks/sel-sensitivity-0.1", 0.1, 0.38)]
    keys = label_keys([s["plan"] for s in summaries])
    out = io.StringIO()
    console = Console(file=out, width=80)
    print_legend(console, keys)
    console.print(attack_table(summaries, keys))
    text = out.getvalue()
    assert "…" not in text and all(len(line) <= 80 for line in text.splitlines()), text
    assert "host-he/tenseal-ckks/sel-sensitivity-0.1" in text and "0.42±0.25" in text and "1/2 9–91%" in text
