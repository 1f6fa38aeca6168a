"""Verdicts on a real quickstart run (tests/fixtures/run-quickstart: 8 rounds, iDLG on 12 images, recorded on
the shared 2-core machine; per-image attack records left out): what it may claim, and what it may not once
its rounds are cut to two."""

from __future__ import annotations

import json
from pathlib import Path

from hebench.analysis.advice import defence_lines, privacy_advice
from hebench.analysis.choose import choose, decide_set
from hebench.report.build import run_options
from hebench.report.load import load_source

RUN = Path(__file__).resolve().parents[1] / "fixtures" / "run-quickstart"


def test_the_quickstart_ranks_on_evidence_and_says_which():
    source = load_source(RUN)
    lines = choose(run_options(source))
    text = "\n".join(lines)
    assert "(7 steady round(s) each)" in text and "(12 image(s) each)" in text
    assert "Not ranked on round time: wall times measured under CPU contention" in text  # 5 processes, 2 cores
    choice = decide_set(run_options(source))
    assert choice.decided and "time" not in choice.measures
    assert "host-he/compact-bfv-16" in choice.members and "offload/tenseal-ckks" in choice.members
    assert choice.dominated["host-he/tenseal-ckks"] == ["host-he/compact-bfv-16"]


def test_the_quickstart_may_say_only_full_encryption_defended():
    attacks = load_source(RUN).attacks
    (curve,) = privacy_advice(attacks)
    assert "p = 0.1: not defended (6 of 12" in curve and "p = 1 (full HE): defended (0 of 12" in curve
    assert curve.endswith("only full encryption defended.")
    assert defence_lines(attacks)[0].count("defended: ") == 1


def test_two_rounds_of_the_quickstart_print_no_set(tmp_path):
    """As ``--set training.rounds=2``: one steady round, no spread; no difference may count as clear."""
    kept = []
    for line in (RUN / "results.jsonl").read_text().splitlines():
        rec = json.loads(line)
        if rec["kind"] in ("round", "party_round") and rec["round"] >= 2:
            continue
        if rec["kind"] == "run":
            rec["suite"]["training"]["rounds"] = 2
        kept.append(json.dumps(rec))
    (tmp_path / "results.jsonl").write_text("\n".join(kept) + "\n")
    lines = choose(run_options(load_source(tmp_path)))
    assert not any(line.startswith(("Pareto set", "Dominated")) for line in lines), lines
    assert any(line.startswith("Not enough evidence for a Pareto set: one steady round") for line in lines)


def test_the_terminal_says_the_selective_verdict_the_report_says():
    from typer.testing import CliRunner

    from hebench.cli.main import app

    result = CliRunner().invoke(app, ["show", str(RUN)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    flat = " ".join(result.output.split())
    (curve,) = privacy_advice(load_source(RUN).attacks)
    assert " ".join(curve.split()) in flat  # the report's privacy line, word for word
    assert "only full encryption defended." in flat
