"""A combined report names runs by folder, flags differing suites, shows load notes and links CSV files."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hebench.report.build import build_report
from tests.results.runs import extended_run


def test_a_two_run_report_names_both_runs_and_flags_the_suite_difference(tmp_path):
    a = extended_run(tmp_path / "quickstart-1", 3)
    b = extended_run(tmp_path / "quickstart-2", 3, training__lr=0.5)
    html = build_report([a, b], tmp_path / "both.html").read_text()
    title = re.search(r"<title>(.*?)</title>", html).group(1)
    assert "quickstart-1" in title and "quickstart-2" in title
    assert "ran different suites" in html and "training.lr" in html


@pytest.fixture(scope="module")
def one_run_report(tmp_path_factory) -> Path:
    """One report of one run, built once for the tests that read it."""
    folder = tmp_path_factory.mktemp("one-run")
    return build_report([extended_run(folder / "run", 3)], folder / "one.html")


def test_every_report_table_has_its_csv_beside_it_and_linked(one_run_report):
    html = one_run_report.read_text()
    links = re.findall(r'href="(one_files/[^"]+\.csv)"', html)
    assert {"one_files/run0-costs.csv", "one_files/run0-overhead.csv", "one_files/environment.csv"} <= set(links)
    assert all((one_run_report.parent / link).exists() for link in links)
    assert "client CPU s/round" in (one_run_report.parent / "one_files/run0-costs.csv").read_text()


def test_contention_is_flagged_in_the_report(one_run_report):
    # the fixture ran 4–6 party processes on 2 cores at a load average up to 2.8
    html = one_run_report.read_text()
    assert "CPU contention" in html and "more party processes than the 2 usable cores" in html
