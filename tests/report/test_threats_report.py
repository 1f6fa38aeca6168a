"""The report per threat model: the default chart keeps the honest-but-curious aggregator's attacks, each other
threat model gets its own options and "what to choose", and the matrix says what each adversary got where."""

from __future__ import annotations

import io
from dataclasses import replace

from rich.console import Console

from hebench.analysis.options import best_attack, options_for
from hebench.analysis.threats import (
    dp_bound_lines,
    matrix,
    threat_keys,
    threat_verdict_lines,
    threat_words,
)
from hebench.cli.render.threats import code, print_threats
from hebench.report.threat_charts import threat_section
from hebench.results.records import AttackSummaryRecord, record_from_json
from tests.report.rows import row

ROWS = [row("raw", "raw", "plain"), row("host-he/ckks", "host-he", "tenseal-ckks")]


def attack(config: str, ssim: float, got: int, adversary: str | None = None, **fields) -> AttackSummaryRecord:
    suffix = "" if adversary is None else f"/{adversary}"
    return AttackSummaryRecord(
        plan=config + suffix,
        attack="dlg",
        view="raw",
        ratio=0.0,
        model="lenet",
        batch_size=1,
        images=4,
        seeds=1,
        restarts=1,
        scores={
            "ssim": {"mean": ssim, "std": 0.1, "min": ssim - 0.1, "max": ssim + 0.1},
            "n": 4,
            "success": {"k": got, "n": 4},
        },
        config=config,
        adversary=adversary,
        **fields,
    )


ATTACKS = [
    attack("raw", 0.99, 4),
    attack("host-he/ckks", 0.02, 0),
    attack("raw", 0.99, 4, "colluding-clients", k=1, obtains="every-update", evidence="tests/x.py::t"),
    attack("host-he/ckks", 0.98, 4, "colluding-clients", k=1, obtains="every-update", evidence="tests/y.py::t"),
]


def test_the_default_chart_scores_only_the_honest_but_curious_aggregator():
    # before threat models, host-he's best attack was the highest SSIM of any plan it owned: the colluder's 0.98
    best = best_attack("host-he/ckks", [r.config for r in ROWS], ATTACKS)
    assert best is not None and best.scores["ssim"]["mean"] == 0.02
    colluding = options_for(ROWS, ATTACKS, threat="colluding-clients:1")
    assert [o.leakage.value for o in colluding] == [0.99, 0.98]


def test_old_attack_records_read_as_the_aggregators():
    line = {k: v for k, v in ATTACKS[0].to_json().items() if k not in ("adversary", "config")}
    old = record_from_json(line)
    assert old.threat_key == "aggregator" and threat_keys([old, ATTACKS[2]]) == ["aggregator", "colluding-clients:1"]


def test_the_matrix_has_a_cell_per_configuration_and_threat_with_its_evidence():
    keys, cells = matrix(ROWS, ATTACKS)
    assert keys == ["aggregator", "colluding-clients:1"]
    assert cells[1][0].text.startswith("SSIM 0.02, 0/4 recovered")
    assert "4/4 recovered" in cells[1][1].text and "obtains every-update" in cells[1][1].text
    assert matrix(ROWS, ATTACKS[:2]) == ([], [])  # only the default threat: no matrix


def test_threat_section_draws_one_chart_and_choice_per_threat_model():
    figures, tables = [], []
    section = threat_section(
        ROWS,
        ATTACKS,
        lambda threat: options_for(ROWS, ATTACKS, threat=threat),
        lambda name, draw, size: figures.append(name) or f"<svg {name}>",
        lambda name, header, values, cells: tables.append((name, header)) or {"header": header, "rows": cells},
        "run0",
    )
    assert figures == ["run0-threat-0"] and section["threats"][0]["title"] == threat_words("colluding-clients:1")
    assert tables[0][1] == ["configuration", "honest-but-curious aggregator", "aggregator + 1 colluding client"]
    assert any("tests/y.py::t" in line for line in section["threat_lines"])


def test_dp_rows_print_their_bound_beside_the_measured_success():
    bound = {"mu": 1.0, "kappa": 0.1, "kappa_pairs": 20, "delta": 1e-5, "epsilon": 4.4, "bound_from_epsilon": 1.0}
    dp = attack("raw/dp", 0.1, 0, dp_bound={**bound, "verdict": "measured 0/4 recovered ... under the bound 0.39"})
    (line,) = dp_bound_lines([dp])
    assert "under the bound 0.39" in line and "μ = 1" in line and "κ ≤ 0.1" in line and "ε = 4.4" in line


def test_the_terminal_matrix_fits_80_columns_with_its_legend():
    out = Console(file=io.StringIO(), width=80, record=True)
    print_threats(out, ROWS, ATTACKS, {})
    text = out.export_text()
    assert "hbc" in text and code("colluding-clients:1") in text and "0.98 4/4" in text
    assert all(len(line) <= 80 for line in text.splitlines())
    assert code("malicious-aggregator:model-inconsistency") == "m-inc" and code("share-holders:2") == "sh2"


def test_each_threat_models_verdict_carries_its_evidence_or_says_it_is_too_thin():
    sharing = attack("ss3", 0.01, 0, "colluding-clients", k=1, obtains="sum", evidence="tests/z.py::t")
    thin = [  # one image each
        attack("raw", 0.9, 1, "observer", obtains="every-update", evidence="t"),
        attack("raw/tls", 0.0, 0, "observer", obtains="nothing", evidence="t"),
    ]
    thin = [replace(a, scores={**a.scores, "success": {"k": a.scores["success"]["k"], "n": 1}}) for a in thin]
    lines = threat_verdict_lines([*ATTACKS, sharing, *thin])
    assert len(lines) == 2 and not any("honest-but-curious" in line for line in lines)  # the default has its own
    colluding, observer = lines
    assert colluding.startswith(threat_words("colluding-clients:1") + ", DLG at batch 1")
    assert "not defended: host-he/ckks (4 of 4 images recovered" in colluding and "against raw 4 of 4" in colluding
    assert "defended: ss3 (0 of 4 images recovered" in colluding
    # one image each: too thin to call, and the line says what would decide it
    assert "not enough evidence: raw/tls" in observer and "each would decide it" in observer


def test_a_matrix_of_many_threat_models_splits_into_tables_that_fit_80_columns_unclipped():
    threats = [
        ("colluding-clients", {"k": 1}),
        ("colluding-clients", {"k": 2}),
        ("key-holder", {}),
        ("observer", {}),
        ("malicious-aggregator", {"strategy": "model-inconsistency", "detected": "round aborted"}),
        ("malicious-aggregator", {"strategy": "trap-weights"}),
        ("share-holders", {"k": 2}),
    ]
    many = [*ATTACKS[:2], *(attack("host-he/ckks", 0.95, 4, adv, **kw) for adv, kw in threats)]
    out = Console(file=io.StringIO(), width=80, record=True)
    print_threats(out, ROWS, many, {})
    text = out.export_text()
    assert all(len(line) <= 80 for line in text.splitlines())
    assert "…" not in text  # no cell or code clipped
    assert text.count("best attack by threat model") >= 2
    assert "0.95 4/4 stop" in text and all(code(k) in text for k in ("key-holder", "share-holders:2", "observer"))


def test_share_holders_are_judged_against_raws_leakage_to_its_aggregator():
    holders = attack("ss3", 0.01, 0, "share-holders", k=2, obtains="nothing", evidence="t")
    (line,) = threat_verdict_lines([*ATTACKS[:2], holders])
    assert "against raw's under the honest-but-curious aggregator" in line and "0 of 4 images recovered" in line
    assert "defended: ss3" in line


def test_a_larger_batch_is_judged_against_raw_at_that_batch_not_credited_as_a_defence():
    from hebench.analysis.advice import defence_lines

    raw4 = replace(attack("raw", 0.05, 0), plan="raw/b4", batch_size=4)
    he4 = replace(attack("host-he/ckks", 0.05, 0), plan="host-he/ckks/b4", batch_size=4)
    lines = defence_lines([*ATTACKS[:2], raw4, he4])
    assert len(lines) == 2 and "at batch 4" in lines[1]
    assert "raw/b4" not in lines[1]  # raw at batch 4 is the reference there, not a protection that defended
    assert "the attack recovered no image from raw" in lines[1]


RAW_TEST = "tests/protections/raw/test_red_team.py::test_red_team_raw_colluding_clients_read_every_update"
HE_TEST = "tests/protections/host_he/test_red_team.py::test_red_team_host_he_colluding_clients_decrypt_every_update"
EARNED = [
    *ATTACKS[:2],
    attack("raw", 0.99, 4, "colluding-clients", k=1, obtains="every-update", evidence=RAW_TEST, conduit="red-team"),
    attack("host-he/ckks", 0.98, 4, "colluding-clients", k=1, obtains="every-update", evidence=HE_TEST),
]


def test_each_cell_carries_the_test_that_earns_it_and_whether_its_view_was_live():
    from hebench.analysis.threats import threat_table

    table = threat_table(ROWS, EARNED)
    assert table is not None and table.keys == ["aggregator", "colluding-clients:1"]
    raw_ref, he_ref = table.refs[0][1], table.refs[1][1]  # the colluding-client column, raw's row and host-he's
    assert raw_ref is not None and he_ref is not None and raw_ref != he_ref
    notes = dict(table.notes)
    assert notes[raw_ref].name == "test_red_team_raw_colluding_clients_read_every_update"
    assert notes[raw_ref].how == "live" and notes[he_ref].how == "declared"  # a conduit, or built from the rule
    assert notes[he_ref].line(he_ref).startswith(f"[{he_ref}] obtains every-update, declared: test_red_team_host_he")
    assert table.refs[0][0] is None  # the default threat's records here name no evidence


def test_the_terminal_cells_point_at_their_tests_listed_below_the_matrix():
    out = Console(file=io.StringIO(), width=80, record=True)
    print_threats(out, ROWS, EARNED, {})
    text = out.export_text()
    assert "0.99 4/4 [1]" in text and "0.98 4/4 [2]" in text
    flat = " ".join(text.split())
    assert "[1] obtains every-update, live: test_red_team_raw_colluding_clients_read_every_update" in flat
    assert "[2] obtains every-update, declared: test_red_team_host_he_colluding_clients_decrypt_every_update" in flat
    assert all(len(line) <= 80 for line in text.splitlines())


def test_the_report_matrix_and_threat_chart_show_a_short_reference_with_the_full_path_in_its_title(tmp_path):
    import json
    import shutil
    from pathlib import Path

    from hebench.report.build import build_report

    run = tmp_path / "run"
    shutil.copytree(Path(__file__).resolve().parents[1] / "fixtures" / "run-offload", run)
    earned = [replace(a, config=c, plan=a.plan.replace(a.config, c)) for a, c in zip(
        EARNED, ("raw", "host-he/tenseal-ckks") * 2, strict=True)]  # fmt: skip
    with (run / "results.jsonl").open("a") as fh:
        for rec in earned:
            fh.write(json.dumps({"schema": "hebench.results/2", "time": 0.0, **rec.to_json()}) + "\n")
    html = build_report([run], tmp_path / "r.html").read_text()
    matrix = html[html.index("By threat model") : html.index("Against:")]
    assert f'title="{RAW_TEST} (live)">[1]&nbsp;live</a>' in matrix
    assert f'title="{HE_TEST} (declared)">[2]&nbsp;declared</a>' in matrix
    assert "<code title=" in matrix and "test_red_team_raw_colluding_clients_read_every_update</code>" in matrix
    chart = html[html.index("Against:") :]
    assert "Evidence: raw" in chart and f'title="{HE_TEST} (declared)"' in chart
