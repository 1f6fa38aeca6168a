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
