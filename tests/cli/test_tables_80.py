"""Tables at 80 columns: every configuration label whole; `compare RUN_A RUN_B` beside `compare libraries`;
one progress line per round when stdout is not a terminal."""

from __future__ import annotations

import io
import json
import re

from rich.console import Console
from typer.testing import CliRunner

from hebench.analysis.summary import summarize_run
from hebench.cli.common import RoundLines
from hebench.cli.main import app
from hebench.cli.render.summary import print_summary
from hebench.results import read_records
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

    from hebench.cli.render.attacks import attack_table
    from hebench.cli.render.legend import label_keys, print_legend

    summaries = [summary("raw", 0.0, 0.42), summary("host-he/tenseal-ckks/sel-sensitivity-0.1", 0.1, 0.38)]
    keys = label_keys([s["plan"] for s in summaries])
    out = io.StringIO()
    console = Console(file=out, width=80)
    print_legend(console, keys)
    console.print(attack_table(summaries, keys))
    text = out.getvalue()
    assert "…" not in text and all(len(line) <= 80 for line in text.splitlines()), text
    assert "host-he/tenseal-ckks/sel-sensitivity-0.1" in text and "0.42±0.25" in text and "1/2 9–91%" in text


def _library_results() -> list[dict]:
    """The recorded `compare libraries` fixture, plus the compact adapters and an extrapolated large size."""
    import copy

    lines = [json.loads(line) for line in (FIXTURES / "libraries" / "compare.jsonl").read_text().splitlines()]
    results = [r["result"] for r in lines if r["kind"] == "library_benchmark"]
    ckks = next(r for r in results if r["adapter"] == "tenseal-ckks")
    for name in ("tenseal-bfv", "pyfhel-ckks", "seal-bfv", "seal-ckks"):
        results.append({**copy.deepcopy(ckks), "adapter": name})
    results.append({**copy.deepcopy(ckks), "adapter": "seal-bfv", "size": 1_206_590, "extrapolated": True})
    return results


def test_compare_libraries_tables_fit_80_columns_with_names_and_errors_whole(monkeypatch):
    from hebench.cli import compare
    from hebench.heops.compare import DEFAULT_ADAPTERS

    out = io.StringIO()
    monkeypatch.setattr(compare, "console", Console(file=out, width=80))
    results = _library_results()
    compare.print_library_tables(results)
    text = out.getvalue()
    assert "…" not in text and all(len(line) <= 80 for line in text.splitlines()), text
    for name in ("tenseal-ckks", "tenseal-bfv", "pyfhel-ckks", "seal-bfv", "seal-ckks", "paillier"):
        assert re.search(rf"^\s*{name}\s", text, re.M), name  # whole, so CKKS and BFV rows are told apart
    assert "1,206,590*" in text
    assert f"{results[0]['error']['max_abs']:.2e}" in text  # the exponent is never cut
    assert "×plain" not in text and "scalar" in text  # plaintext-scalar multiply, not a ratio
    assert {"seal-bfv", "seal-ckks"} <= set(DEFAULT_ADAPTERS)


def test_compare_says_each_warning_once_and_refuses_a_run_against_itself(tmp_path):
    a, b = extended_run(tmp_path / "a", 6), extended_run(tmp_path / "b", 6)
    result = CliRunner().invoke(app, ["compare", str(a), str(b)], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    assert result.output.count("warning:") == 2, result.output  # identical records; contention, for A and B at once
    assert result.output.count("waiting for a core") == 1 and "A and B (load up to" in result.output
    same = CliRunner().invoke(app, ["compare", str(a), str(a)])
    assert same.exit_code == 2 and "same run" in same.output


def test_progress_lines_fit_80_columns_whatever_the_label():
    out = io.StringIO()
    lines = RoundLines(3, Console(file=out, width=80))
    long = "host-he/tenseal-ckks/sel-sensitivity-0.1"
    longer = f"{long}/dp-0.01/with-a-configuration-name-far-too-long-for-one-line"
    for label in ("raw", long, longer, "attacks: 1 plan"):
        lines.show(RunEvent(label, None))
        lines.show(RunEvent(label, 2, {"accuracy": 0.9333}))
    text = out.getvalue().splitlines()
    assert len(text) == 8 and all(len(line) <= 80 for line in text), text
    assert text[3].startswith(f"{long}: round 3/3") and "0.933" in text[3]  # a label that fits stays whole
    assert "…" in text[5] and "round 3/3" in text[5]


def test_one_attack_plan_is_announced_as_one_plan(monkeypatch, tmp_path):
    from hebench.inversion import campaign
    from hebench.results.run_folder import RunFolder
    from hebench.runtime.runner import Runner

    events: list[RunEvent] = []
    runner = Runner.__new__(Runner)  # only the attack step: no suite run
    runner.suite, runner.folder, runner.on_event = None, RunFolder(tmp_path), events.append
    monkeypatch.setattr(campaign, "plans_for", lambda suite: ["one plan"])
    monkeypatch.setattr(campaign, "run_campaign", lambda plans, writer, out: [])
    runner._run_attacks(writer=None, resume=False)  # type: ignore[arg-type]
    assert [e.config for e in events] == ["attacks: 1 plan"]
