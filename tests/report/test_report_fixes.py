"""Report regressions: projected engine times shown, unreadable stored configurations noted, v1 folders load."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from hebench.report.build import build_report, run_section
from hebench.report.figures import FigureSet
from hebench.report.load import load_source

V1 = Path(__file__).resolve().parents[1] / "fixtures" / "run-v1"


def _copy(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    shutil.copytree(V1, run)
    return run


def _edit_lines(run: Path, edit) -> None:
    path = run / "results.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    path.write_text("".join(json.dumps(edit(line)) + "\n" for line in lines))


@pytest.fixture(scope="module")
def v1_report(tmp_path_factory) -> str:
    """The v1 fixture's report, built once for the tests that read it."""
    folder = tmp_path_factory.mktemp("v1")
    run = _copy(folder)
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)  # the suite names calibration.json, relative: found in the run folder
        return build_report([run], folder / "r.html").read_text()


def test_report_shows_projected_engine_times_from_the_suites_calibration(v1_report):
    html = v1_report
    device = json.loads((V1 / "calibration.json").read_text())["environment"]["cpu_model"]
    assert f"Projected engine time on {device}" in html and "<em>projected</em>" in html


def test_a_missing_calibration_file_is_a_note(tmp_path, monkeypatch):
    run = _copy(tmp_path)
    (run / "calibration.json").unlink()
    monkeypatch.chdir(tmp_path)
    html = build_report([run], tmp_path / "r.html").read_text()
    assert "calibration" in html and "Projected engine time" not in html
    assert any("calibration.json" in note and "not found" in note for note in load_source(run).notes)


def test_a_stored_configuration_that_does_not_validate_is_noted_and_left_out_of_the_fit(tmp_path):
    run = _copy(tmp_path)

    def older_writer(line: dict) -> dict:
        """As an early hebench.results/1 writer: no selective spec in the configuration record; and a
        stored suite whose selective configuration no longer validates (here: an impossible ratio)."""
        if line["kind"] == "configuration":
            line.pop("selective", None)
        if line["kind"] == "run":
            for config in line["suite"]["configurations"]:
                if config.get("selective"):
                    config["selective"]["ratio"] = 5.0
        return line

    _edit_lines(run, older_writer)
    source = load_source(run)
    assert any("does not validate" in note and "overhead fit" in note for note in source.notes)
    section = run_section(source, FigureSet(tmp_path / "f"), tmp_path / "f", 0)
    assert section["models"] and all(m.points == 2 for m in section["models"])  # he-ckks and nic-ckks only
    assert all("sel-random" not in m.residuals for m in section["models"])


def test_the_v1_fixture_reports_every_configuration(v1_report):
    html = v1_report
    for label in ("raw", "he-ckks", "nic-ckks", "host-he/tenseal-ckks/sel-random-0.2"):
        assert label in html
    assert "could not be read" not in html
    suite = yaml.safe_load((V1 / "suite.yaml").read_text())
    assert suite["offload"]["calibration"] == "calibration.json"


def test_building_a_report_leaves_the_records_as_read(tmp_path):
    run = _copy(tmp_path)
    source = load_source(run)
    before = [r.to_json() for r in source.records]
    run_section(source, FigureSet(tmp_path / "f"), tmp_path / "f", 0)
    build_report([run], tmp_path / "r.html")
    assert [r.to_json() for r in source.records] == before
