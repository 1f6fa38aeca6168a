"""Text leakage in the report, the terminal and ``compare runs``, from records alone: a section with each view's
outcome (typed reason), exact sequences with their Wilson interval, ROUGE and token scores, recovered text beside
the original (HTML-escaped); the cost-versus-leakage chart's language-model rows; one verdict everywhere."""

from __future__ import annotations

import csv
import json
import re
import shutil
from pathlib import Path

from typer.testing import CliRunner

from hebench.analysis.choose import decide_set, measure_name
from hebench.analysis.compare_runs import compare_runs
from hebench.analysis.options import LEAKAGE
from hebench.analysis.success import wilson
from hebench.analysis.text_leakage import text_verdicts
from hebench.cli.main import app
from hebench.report.build import build_report, run_options
from hebench.report.leakage_chart import chart_caption, y_label
from hebench.report.load import load_source
from hebench.results.records import TextAttackSummaryRecord as Summary

RUN = Path(__file__).resolve().parents[1] / "fixtures" / "run-offload"  # raw, host-he, offload
NASTY = "<script>alert('x')</script> & <b>bold</b>\n"


def summary(config: str, view: str, outcome: str, exact: int, n: int, why: str = "", **scores) -> Summary:
    low, high = wilson(exact, n)
    rouge = scores.pop("rouge1", float(exact == n))
    return Summary(
        config=config,
        adversary="aggregator",
        view=view,
        batch_size=n,
        sequences=n,
        exact=exact,
        exact_rate=exact / n,
        exact_low=low,
        exact_high=high,
        rouge1=rouge,
        rouge2=rouge,
        rougeL=rouge,
        token_precision=rouge,
        token_recall=rouge,
        outcomes={outcome: 1},
        why=why,
        examples=({"original": NASTY, "recovered": NASTY if exact else None, "rouge1": rouge, "exact": bool(exact)},),
        **scores,
    )


RECORDS = (
    summary("raw", "plain", "recovered", 2, 2),
    summary("host-he/tenseal-ckks", "encrypted", "failed", 0, 2, "nothing-observed: the view holds no update"),
    summary("offload/tenseal-ckks", "encrypted", "partial", 0, 2, "order-unavailable: tokens by position", rouge1=0.0),
)


def with_text(dst: Path, records=RECORDS) -> Path:
    shutil.copytree(RUN, dst)
    with (dst / "results.jsonl").open("a") as fh:
        for rec in records:
            fh.write(json.dumps({"schema": "hebench.results/2", "time": 0.0, **rec.to_json()}) + "\n")
    return dst


def test_the_report_shows_each_views_text_leakage_and_escapes_the_recovered_text(tmp_path):
    html = build_report([with_text(tmp_path / "run")], tmp_path / "r.html").read_text()
    section = html[html.index('id="text-leakage"') : html.index('id="model"')]
    assert "<td>recovered</td><td>2/2 (34–100 %)</td>" in section
    assert "<td>failed: nothing-observed</td><td>0/2 (0–66 %)</td>" in section
    assert "<td>partial: order-unavailable</td>" in section
    assert "<script>" not in html and "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &lt;b&gt;" in section
    assert section.count('<pre class="text-sample">') == 4  # raw: original and recovered; the others: originals
    rows = list(csv.DictReader((tmp_path / "r_files" / "text-attacks.csv").open()))
    assert [(r["configuration"], r["exact k"], r["sequences n"], r["reason"]) for r in rows] == [
        ("raw", "2", "2", ""),
        ("host-he/tenseal-ckks", "0", "2", "nothing-observed"),
        ("offload/tenseal-ckks", "0", "2", "order-unavailable"),
    ]


def test_the_chart_gains_language_model_rows_at_their_exact_sequence_rate(tmp_path):
    source = load_source(with_text(tmp_path / "run"))
    options = {o.config: o for o in run_options(source)}
    assert {c: (o.leakage_kind, o.leakage.k, o.leakage.n) for c, o in options.items() if o.leakage} == {
        "raw": ("text", 2, 2),
        "host-he/tenseal-ckks": ("text", 0, 2),
        "offload/tenseal-ckks": ("text", 0, 2),
    }
    assert options["raw"].recovered == options["raw"].leakage  # what the Pareto set ranks on is what is drawn
    assert "sequences recovered exactly" in " ".join(y_label(list(options.values())).split())
    assert "recovered exactly (same tokens, same order)" in chart_caption(list(options.values()))
    # the verdicts name what they counted: sequences, not images
    assert measure_name(decide_set(list(options.values())), LEAKAGE) == "leakage (sequences recovered exactly)"


def test_show_prints_the_same_verdicts_as_the_report(tmp_path):
    run = with_text(tmp_path / "run")
    out = CliRunner().invoke(app, ["show", str(run)], env={"COLUMNS": "160"}).output
    for v in text_verdicts(load_source(run).text_attacks):
        assert re.search(rf"{re.escape(v.config)} · {v.view}\s+\d+\s+{re.escape(v.outcome_words)}\s+", out), out
        assert v.exact_words in out
    assert "2/2 sequences exact (34–100 %), ROUGE-1 1.00" in " ".join(out.split())  # "what to choose": the same


def test_compare_runs_sets_each_views_verdict_in_a_beside_b(tmp_path):
    a = with_text(tmp_path / "a")
    b = with_text(tmp_path / "b", (summary("raw", "plain", "failed", 0, 40, "span-full: noise"), *RECORDS[1:]))
    shutil.copy(a / "results.jsonl", tmp_path / "keep")  # b's records differ from a's only in raw's text leakage
    text = {(t.config, t.view): t for t in compare_runs(a, b).text}
    assert text[("host-he/tenseal-ckks", "encrypted")].verdict == "same"
    raw = text[("raw", "plain")]
    assert raw.a is None and raw.verdict == "only in B"  # batch sizes differ: 2 in A, 40 in B
    assert text[("raw", "plain")].b.line == "failed: span-full; 0/40 (0–9 %) exact, ROUGE-1 0.00"
