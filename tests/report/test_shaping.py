"""What goes into each table and figure, from small recorded fixtures."""

from __future__ import annotations

import re
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from matplotlib.figure import Figure

from hebench.analysis.advice import advise
from hebench.analysis.model_fit import fit
from hebench.report.build import build_report, library_section, run_section
from hebench.report.figures import FigureSet
from hebench.report.load import load_source
from tests.report.rows import row

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
RUN = FIXTURES / "run-offload"
LIBS = FIXTURES / "libraries" / "compare.jsonl"


def test_run_section_has_one_row_per_configuration_and_writes_csv(tmp_path):
    section = run_section(load_source(RUN), FigureSet(tmp_path), tmp_path, 0)
    assert [r.config for r in section["rows"]] == ["raw", "host-he/tenseal-ckks", "offload/tenseal-ckks"]
    assert (tmp_path / section["table"]["csv"]).read_text().count("\n") == 4
    assert len(section["figures"]) == 2 and len(section["quality"]) == 3
    assert (tmp_path / "run0-phases.png").exists() and (tmp_path / "run0-phases.svg").exists()
    offload = section["offload"][0]
    assert offload.engine_cpu_s_per_round > 0 and offload.host_engine_bytes_per_round > 0
    assert section["spread"][0]["cpu"][0] <= section["spread"][0]["cpu"][1]


def test_library_section_rows_and_log_figures(tmp_path):
    libs = load_source(LIBS).libraries
    section = library_section(libs, FigureSet(tmp_path), tmp_path)
    assert all([row[0] for row in t["rows"]] == [r["adapter"] for r in libs] for t in section["tables"])
    assert len(section["figures"]) == len({r["size"] for r in libs})


def test_overhead_model_recovers_known_coefficients():
    half = {"mask": "random", "ratio": 0.5}
    rows = [
        row("raw", "raw", "plain", round_wall_s=2.0),
        row("a", "host-he", round_wall_s=2.0 * (1 + 3.0)),
        replace(row("b", "host-he", round_wall_s=2.0 * (1 + 3.0 * 0.5)), selective=half),
        row("c", "offload", round_wall_s=2.0 * (1 + 3.0 + 0.25)),
        replace(row("d", "host-he", round_wall_s=2.0 * (1 + 3.0 * 0.25)), selective={"mask": "random", "ratio": 0.25}),
    ]
    model = fit(rows, "round_wall_s")
    assert model.coefficients["HE encrypt (x) × encrypted fraction"] == pytest.approx(3.0)
    assert model.coefficients["offload engine"] == pytest.approx(0.25) and model.r2 == pytest.approx(1.0)
    assert model.dof == 2 and model.note is None
    assert fit(rows[:1], "round_wall_s") is None  # nothing to compare with raw


def test_advice_comes_from_the_numbers():
    rows = [
        row("raw", "raw", "plain", upload_bytes_per_client_round=10, accuracy=0.9, max_abs_error=0.0),
        row("big", "host-he", upload_bytes_per_client_round=500, accuracy=0.9, max_abs_error=1e-7),
        row("small", "host-he", upload_bytes_per_client_round=200, accuracy=0.89, max_abs_error=1e-6),
    ]
    lines = advise(rows)
    assert any("0.0100" in line and "small" in line for line in lines)  # the accuracy cost, from the numbers
    assert not any("Least" in line for line in lines)  # no winner per metric: the Pareto set says what to choose


def test_partial_and_damaged_results_still_give_a_report(tmp_path):
    partial = tmp_path / "partial"
    partial.mkdir()
    lines = (RUN / "results.jsonl").read_text().splitlines()
    kept = [line for line in lines if '"round": 2' not in line]  # as if the run stopped after round 2 of 3
    (partial / "results.jsonl").write_text("\n".join(kept) + '\n{"schema": "hebench.results/1", "kind": "ro')
    html = build_report([partial, tmp_path / "missing"], tmp_path / "r.html").read_text()
    assert "Missing or damaged" in html and "could not be read" in html
    assert "completed 2 of 3 rounds" in html and "does not exist" in html
    assert "<svg" in html  # what is there is still drawn


def test_report_combines_sources_and_writes_files(tmp_path):
    shutil.copytree(RUN, tmp_path / "run")
    out = build_report([tmp_path / "run", LIBS], tmp_path / "reports" / "both.html")
    html = out.read_text()
    for heading in (
        "What was run",
        "Costs per mode",
        "Overhead against raw",
        "HE library comparison",
        "Overhead model",
        "What to choose",
    ):
        assert heading in html
    files = sorted(p.name for p in (tmp_path / "reports" / "both_files").iterdir())
    assert "libraries.csv" in files and "run0-costs.csv" in files and any(f.endswith(".svg") for f in files)
    assert not re.search(r"""(src|href)=["']https?://""", html)  # nothing is fetched: it opens offline


@pytest.mark.slow  # a two-run report, one of them on Flower
def test_a_flower_run_sits_beside_local_runs_with_its_round_time_kept_apart(tmp_path):
    shutil.copytree(RUN, tmp_path / "local")
    shutil.copytree(FIXTURES / "run-flower", tmp_path / "flower")
    section = run_section(load_source(tmp_path / "flower"), FigureSet(tmp_path), tmp_path, 1)
    assert [r.runtime for r in section["rows"]] == ["flower", "flower"]
    assert all(r.round_wall_s is None and r.flower_round_wall_s > 0 for r in section["rows"])
    offload = section["rows"][1]
    assert offload.upload_bytes_per_client_round > 0 and offload.engine_cpu_s_per_round > 0
    html = build_report([tmp_path / "local", tmp_path / "flower"], tmp_path / "both.html").read_text()
    assert "(on Flower)" in html and "Flower round wall s" in html and "not comparable with local round times" in html
    assert html.count("(on Flower)") >= 2 and "Missing or damaged" not in html


def test_each_figure_renders_once_per_format_and_inlines_its_svg_file(tmp_path, monkeypatch):
    saves = []
    real = Figure.savefig

    def savefig(self, fname, **kwargs):
        saves.append(kwargs.get("format") or Path(fname).suffix.lstrip("."))
        return real(self, fname, **kwargs)

    monkeypatch.setattr(Figure, "savefig", savefig)
    inline = FigureSet(tmp_path).add("line", lambda fig: fig.subplots().plot([0, 1], [1, 0]))
    assert sorted(saves) == ["png", "svg"]  # the inline copy is the SVG file's text, not a third render
    assert inline in (tmp_path / "line.svg").read_text() and (tmp_path / "line.png").stat().st_size > 0
