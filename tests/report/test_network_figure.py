"""The links chart: a legend that explains only the markers drawn, and ticks in plain numbers (#40: a "model, same
link" hollow marker no point used; ticks read 6×10⁻¹, 2×10⁰). Real runs: tests/fixtures/run-links (userspace
emulation) and run-links-model (the same suite with network.emulation=model)."""

from __future__ import annotations

import re
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from hebench.links.rows import link_rows
from hebench.report.load import load_source
from hebench.report.network_figure import model_curves, round_time_figure

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def drawn(*runs: str, only: str | None = None) -> Figure:
    sources = [load_source(FIXTURES / run) for run in runs]
    rows = [(s, row) for s in sources for row in link_rows(s.records) if only in (None, row.protection)]
    fig = Figure(figsize=(8.5, 3.8), layout="constrained")
    FigureCanvasAgg(fig)
    round_time_figure(rows, model_curves(sources, rows))(fig)
    fig.draw_without_rendering()
    return fig


def legend(fig: Figure) -> list[str]:
    return [t.get_text() for t in fig.axes[0].get_legend().get_texts()]


def hollow(fig: Figure) -> int:
    return sum(1 for line in fig.axes[0].get_lines() if line.get_markerfacecolor() == "none" and len(line.get_xdata()))


def test_the_legend_explains_only_what_is_drawn():
    # CKKS ran on one emulated link: its line is drawn through that very run, so there is no prediction to show
    alone = drawn("run-links", only="host-he/tenseal-ckks")
    assert hollow(alone) == 0 and "model, same link" not in legend(alone)
    assert "emulated (measured)" in legend(alone) and "modelled run" not in legend(alone)
    raw = drawn("run-links", only="raw")  # raw on two links: the lte point beside the line from home broadband
    assert hollow(raw) == 1 and "model, same link" in legend(raw)
    both = drawn("run-links", "run-links-model")  # the model run predicts the emulated links: hollow points
    assert hollow(both) > 0 and {"model, same link", "modelled run"} <= set(legend(both))


def test_ticks_read_as_plain_numbers():
    fig = drawn("run-links", "run-links-model")
    ax = fig.axes[0]
    for axis in (ax.xaxis, ax.yaxis):
        labels = [t.get_text() for t in [*axis.get_ticklabels(), *axis.get_ticklabels(minor=True)] if t.get_text()]
        assert labels, axis
        assert all(re.fullmatch(r"[\d.]+", text) for text in labels), labels
