"""A language run's text views per threat model, from records alone: the colluding client's, all share holders' and
the lying aggregator's views sit under their adversaries in the matrix, the per-threat panels and "what to choose",
with the rule's test; the verdicts judge sequences recovered exactly against raw's (Newcombe on Wilson intervals)
and say when the evidence is too thin; the terminal, the report and ``compare runs`` read the same; a chart mixing
images and text gives each measure its own row of panels and y axis."""

from __future__ import annotations

import io
import re
import shutil
from dataclasses import replace

from matplotlib.figure import Figure
from rich.console import Console
from typer.testing import CliRunner

from hebench.analysis.options import Interval, Option, options_for
from hebench.analysis.text_leakage import text_verdicts
from hebench.analysis.text_threats import VIEW_THREATS, text_threats, threat_of
from hebench.analysis.threats import matrix, threat_table, threat_verdict_lines, threat_words
from hebench.cli.main import app
from hebench.cli.render.threats import code, print_threats
from hebench.report.build import build_report
from hebench.report.leakage_chart import chart_caption, cost_leakage, leakage_rows
from tests.report.rows import row
from tests.report.test_text_leakage_report import summary, with_text

HE_TEST = "tests/protections/host_he/test_red_team.py::test_red_team_host_he_colluding_clients_decrypt_every_update"
ALL_HOLDERS = "tests/protections/sharing/test_red_team.py::test_red_team_secret_sharing_share_holders_all_K_collude"
ROWS = [
    row("raw", "raw", "plain"),
    row("host-he/ckks", "host-he", "tenseal-ckks"),
    replace(row("ss3", "secret-sharing"), params={"aggregators": 3}),
    row("secagg", "secagg"),
]


def view(config: str, adversary: str, name: str, outcome: str, exact: int, n: int, why: str = ""):
    return replace(summary(config, name, outcome, exact, n, why), adversary=adversary)


SUMMARIES = [
    view("raw", "aggregator", "plain", "recovered", 2, 2),
    view("raw", "aggregator", "plain", "recovered", 1, 1),
    view("host-he/ckks", "aggregator", "encrypted", "failed", 0, 2, "nothing-observed: no update"),
    view("host-he/ckks", "colluding client", "host-he-colluder", "recovered", 2, 2),
    view("ss3", "one share holder", "shares-1", "failed", 0, 2, "nothing-observed: uniform words"),
    view("ss3", "all share holders", "shares-all", "failed", 0, 2, "span-full: quantisation noise"),
    view("secagg", "aggregator", "secagg-sum", "failed", 0, 2, "adapter-rank: 90 > 64"),
    view("secagg", "aggregator", "model-inconsistency", "recovered", 2, 2),
    view("secagg", "aggregator", "model-inconsistency", "failed", 0, 1, "span-full: noise"),
]
TEXT = text_threats(ROWS, text_verdicts(SUMMARIES))
COLLUDER, HOLDERS, LIAR = "colluding-clients:1", "share-holders:3", "malicious-aggregator:model-inconsistency"


def test_each_single_update_view_stands_for_its_threat_model_with_the_rules_test():
    assert set(VIEW_THREATS) == {"host-he-colluder", "shares-all", "model-inconsistency"}  # every other: aggregator
    keys = {(t.verdict.config, t.verdict.view, t.verdict.batch_size): t for t in TEXT}
    colluder = keys[("host-he/ckks", "host-he-colluder", 2)]
    assert colluder.key == COLLUDER and colluder.earned is not None
    assert (colluder.earned.evidence, colluder.earned.obtains, colluder.earned.how) == (HE_TEST, "every-update", "live")
    holders = keys[("ss3", "shares-all", 2)]
    assert holders.key == HOLDERS and holders.earned is not None and holders.earned.evidence == ALL_HOLDERS
    assert keys[("secagg", "model-inconsistency", 2)].key == LIAR  # its records say aggregator: it deviates
    assert {keys[("ss3", "shares-1", 2)].key, keys[("raw", "plain", 2)].key} == {"aggregator"}  # one share: its own
    assert threat_of("shares-all", 2) == "share-holders:2"  # K comes from the configuration
    assert threat_of("dp+shares-all", 3) == HOLDERS and threat_of("dp+model-inconsistency") == LIAR  # DP: same
    assert threat_of("dp+secagg-sum") == threat_of("selective-global") == "aggregator"


def test_the_lying_aggregator_leaves_the_honest_aggregators_chart_and_gets_its_own():
    default = {o.config: o for o in options_for(ROWS, text=text_verdicts(SUMMARIES))}
    assert (default["secagg"].leakage.k, default["secagg"].leakage.n) == (0, 2)  # secagg-sum, not the lie's 2/2
    liar = {o.config: o for o in options_for(ROWS, threat=LIAR, text=text_verdicts(SUMMARIES))}
    assert liar["secagg"].leakage_kind == "text" and (liar["secagg"].leakage.k, liar["secagg"].leakage.n) == (2, 2)
    assert liar["raw"].leakage is None and liar["host-he/ckks"].leakage is None  # no view of theirs: not attacked
    colluding = {o.config: o for o in options_for(ROWS, threat=COLLUDER, text=text_verdicts(SUMMARIES))}
    assert colluding["host-he/ckks"].leakage.k == 2 and colluding["host-he/ckks"].recovered.unit == "sequences"


def test_the_matrix_places_each_view_under_its_adversary():
    keys, cells = matrix(ROWS, [], TEXT)
    assert keys == ["aggregator", COLLUDER, HOLDERS, LIAR]
    by = {r.config: dict(zip(keys, line, strict=True)) for r, line in zip(ROWS, cells, strict=True)}
    assert by["host-he/ckks"][COLLUDER].text.startswith("2/2 sequences exact (34–100 %), ROUGE-1 1.00")
    assert "obtains every-update" in by["host-he/ckks"][COLLUDER].text
    assert by["ss3"][HOLDERS].text.startswith("0/2 sequences exact (0–66 %)") and "span-full" in by["ss3"][HOLDERS].text
    assert by["raw"][COLLUDER].text == "–" and by["ss3"]["aggregator"].exact.n == 2
    table = threat_table(ROWS, [], TEXT)
    assert table is not None and table.text and not table.images
    assert table.values[1][2] == 1.0  # the CSV: host-he's exact-sequence rate under the colluding client


def test_each_adversarys_verdict_judges_sequences_against_raw_and_says_when_it_is_too_thin():
    lines = threat_verdict_lines([], text=TEXT)
    colluder = next(line for line in lines if line.startswith(threat_words(COLLUDER)))
    assert "exact span attack at batch 2" in colluder
    assert "against raw's under the honest-but-curious aggregator" in colluder  # raw gives no colluder a view
    assert "not defended: host-he/ckks (2 of 2 sequences recovered exactly (34–100 %)" in colluder
    holders = next(line for line in lines if line.startswith(threat_words(HOLDERS)))
    # all K holders rebuild the update (the rule's red-team test): a failed attack there is not a defence
    assert "not shown: ss3 (0 of 2 sequences recovered exactly (0–66 %) against raw 2 of 2 (Newcombe 95 %)" in holders
    assert f"yet this adversary obtains every-update ({ALL_HOLDERS.rsplit('::')[-1]})" in holders
    assert "span-full" in holders
    assert "defended: ss3" not in holders.replace("not shown: ss3", "")
    liar = [line for line in lines if line.startswith(threat_words(LIAR))]
    assert len(liar) == 2 and "not defended: secagg (2 of 2" in liar[0]
    # one sequence each: the intervals overlap, so no verdict, and the line says what would decide it
    # one sequence each: the intervals overlap, and the lie isolates the victim's update: not shown, with what
    # more sequences would decide the rates
    assert "at batch 1" in liar[1] and "not shown: secagg (0 of 1 sequences recovered exactly" in liar[1]
    assert re.search(r"\d+ more sequences? each would decide it", liar[1])
    assert not any(line.startswith(threat_words("aggregator")) for line in lines)  # the default has its own


def test_the_terminal_matrix_shows_each_adversarys_sequences_with_interval_and_test():
    out = Console(file=io.StringIO(), width=80, record=True)
    print_threats(out, ROWS, [], {}, TEXT)
    text = out.export_text()
    flat = " ".join(text.split())
    assert "sequences recovered exactly (Wilson 95 %)" in flat and "mean SSIM" not in flat
    assert re.search(r"2/2 \(34–100%\) \[\d\]", text) and code(COLLUDER) in text and code(HOLDERS) in text
    assert "obtains every-update, live: test_red_team_host_he_colluding_clients_decrypt_every_update" in flat
    assert "not defended: host-he/ckks (2 of 2 sequences recovered exactly" in flat
    assert all(len(line) <= 80 for line in text.splitlines())


RUN_VIEWS = (
    summary("raw", "plain", "recovered", 2, 2),
    summary("host-he/tenseal-ckks", "encrypted", "failed", 0, 2, "nothing-observed: the view holds no update"),
    replace(summary("host-he/tenseal-ckks", "host-he-colluder", "recovered", 2, 2), adversary="colluding client"),
    summary("offload/tenseal-ckks", "encrypted", "failed", 0, 2, "nothing-observed: the view holds no update"),
)


def test_the_report_show_and_compare_runs_tell_the_same_story_per_adversary(tmp_path):
    run = with_text(tmp_path / "run", RUN_VIEWS)
    html = build_report([run], tmp_path / "r.html").read_text()
    part = html[html.index("By threat model") : html.index('id="text-leakage"')]
    assert "<th>aggregator + 1 colluding client</th>" in part
    assert "2/2 sequences exact (34–100 %), ROUGE-1 1.00, obtains every-update" in part
    assert f'title="{HE_TEST} (live)"' in part and "sequences the text attack recovered exactly" in part
    assert "Against: aggregator + 1 colluding client" in part and "not defended: host-he/tenseal-ckks (2 of 2" in part
    verdict = "not defended: host-he/tenseal-ckks (2 of 2 sequences recovered exactly (34–100 %)"
    shown = CliRunner().invoke(app, ["show", str(run)], env={"COLUMNS": "160"}).output
    assert verdict in " ".join(shown.split()) and "2/2 (34–100%) [1]" in shown
    shutil.copytree(run, tmp_path / "b")
    compared = CliRunner().invoke(app, ["compare", "runs", str(run), str(tmp_path / "b")], env={"COLUMNS": "200"})
    line = next(x for x in compared.output.splitlines() if "host-he-colluder" in x)
    assert f" {code(COLLUDER)} " in line and "same" in line
    assert f"{code(COLLUDER)}: {threat_words(COLLUDER)}" in " ".join(compared.output.split())


def _option(config: str, kind: str, value: float) -> Option:
    leak = Interval(value, max(0.0, value - 0.1), min(1.0, value + 0.1), n=4, k=round(4 * value), unit="x")
    cost = Interval(2.0, 1.8, 2.2, sd=0.1, n=3)
    return Option(config, run=kind, costs={"cpu": cost}, leakage=leak, recovered=leak, leakage_kind=kind)


def test_a_chart_mixing_images_and_text_gives_each_measure_its_own_row_and_axis():
    options = [_option("raw", "ssim", 0.9), _option("raw", "text", 1.0), _option("host-he", "text", 0.0)]
    assert [[o.leakage_kind for o in r] for r in leakage_rows(options)] == [["ssim"], ["text", "text"]]
    fig = Figure()
    cost_leakage(options)(fig)
    labels = [" ".join(ax.get_ylabel().split()) for ax in fig.axes if ax.get_ylabel()]
    assert len(labels) == 2 and "SSIM" in labels[0] and "SSIM" not in labels[1] and "exactly" in labels[1]
    caption = chart_caption(options, combined=True)
    assert "upper row of panels" in caption and "lower row of panels" in caption and "not on one scale" in caption
    single = [o for o in options if o.leakage_kind == "text"]
    assert len(leakage_rows(single)) == 1 and "row of panels" not in chart_caption(single)
