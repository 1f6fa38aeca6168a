"""The HTML report and its CSV files: units that match, no split numbers or empty columns, contiguous sections,
the attack table with images recovered, numeric CSV, the privacy figure anchored at p = 0 and p = 1."""

from __future__ import annotations

import csv
import json
import re
import shutil
from pathlib import Path

import pytest

from hebench.report.build import build_report
from tests.analysis.test_defended import attacked

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
RUN = FIXTURES / "run-offload"
LIBS = FIXTURES / "libraries" / "compare.jsonl"


def with_attacks(dst: Path) -> Path:
    """run-offload with iDLG run against each configuration's view and a 10 % sensitivity mask, 2 images each."""
    shutil.copytree(RUN, dst)
    records = [
        attacked("raw", 1, 2, 0.0, "raw"),
        attacked("host-he/tenseal-ckks", 0, 2),
        attacked("offload/tenseal-ckks", 0, 2),
        attacked("frontier/sensitivity-0.1", 1, 2, 0.1, "selective", "sensitivity"),
    ]
    with (dst / "results.jsonl").open("a") as fh:
        for rec in records:
            fh.write(json.dumps({"schema": "hebench.results/2", "time": 0.0, **rec.to_json()}) + "\n")
    return dst


def text_of(html: str) -> str:
    return re.sub(r"<svg.*?</svg>", "", html, flags=re.S)


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    """One report of run-offload with attacks (built once: figures take seconds on a busy host)."""
    tmp = tmp_path_factory.mktemp("report")
    return build_report([with_attacks(tmp / "run")], tmp / "r.html")


def test_the_attack_table_shows_images_recovered_and_the_csv_holds_numbers(report):
    html = text_of(report.read_text())
    assert "<td>1/2 (9–91 %)</td>" in html and "<td>0/2 (0–66 %)</td>" in html
    rows = list(csv.DictReader((report.parent / "r_files" / "attacks.csv").open()))
    assert rows[0]["recovered k"] == "1" and rows[0]["recovered n"] == "2"
    assert float(rows[0]["SSIM mean"]) == 0.8 and float(rows[0]["SSIM std"]) == 0.1
    assert not any("±" in value for row in rows for value in row.values())


def test_the_costs_table_headers_carry_no_unit_the_cells_contradict_and_no_column_is_all_dashes(report):
    full = report.read_text()
    html = text_of(full)
    costs = html[html.index('id="costs"') : html.index('id="overhead"')]
    headers = re.findall(r"<th>([^<]*)</th>", costs)
    assert "host CPU per round" in headers and "total CPU (host + engine)" in headers
    assert not any(re.search(r"\bs/round|B/round|RSS B|wall s\b", h) for h in headers), headers
    assert "Flower round wall" not in costs  # a local run: that column would be all dashes
    with (report.parent / "r_files" / "run0-costs.csv").open() as fh:
        header = next(csv.reader(fh))
    assert "client CPU s/round" in header and "Flower round wall s" in header  # the CSV keeps every column
    assert "td { white-space: nowrap; }" in full  # "1.4e-" / "08" never split over two lines


def test_section_numbers_are_contiguous_and_no_libraries_heading_without_libraries(report, tmp_path):
    html = text_of(report.read_text())
    numbers = [int(n) for n in re.findall(r"<h2 id=\"\w+\">(\d+)\. ", html)]
    assert numbers == list(range(1, len(numbers) + 1)) and len(numbers) == 6  # no libraries section: 5 → privacy
    assert "Libraries and privacy" not in html and "HE libraries" not in html
    libraries = text_of(build_report([LIBS], tmp_path / "b.html").read_text())
    assert "<h3>HE libraries</h3>" in libraries


def test_the_privacy_figure_names_the_attack_that_ran_and_is_anchored_at_raw_and_full_he(report):
    html = report.read_text()
    caption = re.search(r"<figcaption>(Leakage: .*?)</figcaption>", html).group(1)
    assert caption.startswith("Leakage: iDLG reconstruction SSIM")
    assert " DLG" not in caption
    assert "random" not in caption and "sensitivity mask that ran" in caption
    svg = (report.parent / "r_files" / "privacy-frontier.svg").read_text()
    assert "p = 0: raw, nothing encrypted (iDLG)" in svg and "p = 1: full HE (iDLG)" in svg
    assert "only full encryption defended" not in html  # two images decide nothing


def test_the_overhead_model_states_its_degrees_of_freedom_and_shows_residuals(tmp_path):
    html = text_of(build_report([FIXTURES / "run-v1"], tmp_path / "r.html").read_text())
    model = html[html.index('id="model"') :]
    assert "1 degree of freedom)" in model and "too few to check the model" in model
    assert "<th>best fit would predict</th><th>residual</th>" in model
    assert not any("R²" in h for h in re.findall(r"<h3>.*?</h3>", model))  # no R² beside a model not shown


def test_a_dropouts_run_counts_dropped_clients_apart_in_the_costs(tmp_path):
    # #40: a client that dropped counted as a 134-byte upload; the report now says how many dropped, apart
    html = text_of(build_report([FIXTURES / "run-dropouts"], tmp_path / "d.html").read_text())
    assert "counted apart: raw@30 3 of 12, ckks@30 3 of 12, secagg@30 3 of 12" in html
    assert "134 B" not in html
    rows = list(csv.DictReader((tmp_path / "d_files" / "run0-costs.csv").open()))
    raw30 = next(r for r in rows if r["configuration"] == "raw@30")
    assert (raw30["clients selected"], raw30["clients dropped"], raw30["upload B/round"]) == ("12", "3", "51249.0")
    dropouts = list(csv.DictReader((tmp_path / "d_files" / "dropouts.csv").open()))
    assert next(r for r in dropouts if r["configuration"] == "raw@30")["clients dropped"] == "5"
    assert "28% (5 of 18)" in html


def test_one_round_is_said_alike_in_the_tables_notes_and_verdicts(tmp_path):
    # #40: "no steady round yet" beside "1 steady round(s) each" under "min–max over steady rounds"
    html = text_of(build_report([FIXTURES / "run-one-round"], tmp_path / "one.html").read_text())
    assert "steady round(s)" not in html and "min–max over steady rounds" not in html
    assert "min–max over rounds (the first, warm-up round included: no steady round yet)" in html
    assert "0 (1 with the warm-up)" in html and "no steady round completed" in html
    assert "Per client that uploaded, per round (the warm-up round included)" in html and "per steady round" not in html


def test_other_adversaries_are_named_and_a_vifp_above_one_is_marked_and_explained(tmp_path):
    # #40: "Privacy: what the aggregator reconstructs" over an outside observer's rows; VIFp 2.93 unexplained
    from dataclasses import replace

    run = shutil.copytree(FIXTURES / "run-one-round", tmp_path / "run")
    noise = attacked("host-he/tenseal-ckks", 0, 4)
    noise = replace(
        noise, scores={**noise.scores, "ssim": {"mean": 0.05, "std": 0.01}, "vifp": {"mean": 2.93, "std": 0.4}}
    )
    observer = replace(attacked("raw", 4, 4, 0.0, "raw"), plan="raw/observer", adversary="observer", config="raw")
    with (run / "results.jsonl").open("a") as fh:
        for rec in (attacked("raw", 4, 4, 0.0, "raw"), noise, observer):
            fh.write(json.dumps({"schema": "hebench.results/2", "time": 0.0, **rec.to_json()}) + "\n")
    html = text_of(build_report([run], tmp_path / "r.html").read_text())
    assert "Privacy: what each adversary reconstructs" in html and "what the aggregator reconstructs" not in html
    assert "<th>adversary</th>" in html and "<td>outside network observer</td>" in html
    assert "2.93 ± 0.40†" in html and "† VIFp above 1 (host-he/tenseal-ckks 2.93)" in html
    assert "an outside network observer read on that configuration&#39;s wire" in html
    attacks_csv = list(csv.DictReader((tmp_path / "r_files" / "attacks.csv").open()))
    assert [r["threat model"] for r in attacks_csv] == ["aggregator", "aggregator", "observer"]
