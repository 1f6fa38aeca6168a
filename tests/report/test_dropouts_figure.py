"""The dropouts chart numbers rounds as the terminal does (1/3–3/3: from 1, whole rounds) and draws its dropped
share from 0 %, so one measured share is not stretched over a span of its own (#40: 0–2 with 0.5 ticks, and an
x-axis of 10.6–11.6 around one value)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from hebench.analysis.dropouts import dropout_rows
from hebench.report.dropouts_figure import dropouts_figure
from hebench.results import read_records

RUN = Path(__file__).resolve().parents[1] / "fixtures" / "run-dropouts"


def drawn(rows) -> Figure:
    fig = Figure(figsize=(8.5, 3.6), layout="constrained")
    FigureCanvasAgg(fig)
    dropouts_figure(rows)(fig)
    fig.draw_without_rendering()
    return fig


def test_rounds_are_numbered_from_one_in_whole_rounds():
    fig = drawn(dropout_rows(read_records(RUN / "results.jsonl").records))
    _, acc = fig.axes
    assert {tuple(line.get_xdata()) for line in acc.get_lines()} == {(1, 2, 3)}
    ticks = [t for t in acc.get_xticks() if acc.get_xlim()[0] <= t <= acc.get_xlim()[1]]
    assert ticks and all(float(t).is_integer() for t in ticks), ticks


def test_the_dropped_share_axis_starts_at_zero_even_around_one_value():
    rows = dropout_rows(read_records(RUN / "results.jsonl").records)
    one_share = [replace(r, dropped_share=0.111) for r in rows]  # every protection at one measured share
    for fig in (drawn(rows), drawn(one_share)):
        cost = fig.axes[0]
        low, high = cost.get_xlim()
        assert low == 0 and high >= 10, (low, high)
        labels = [t.get_text() for t in cost.get_xticklabels() if t.get_text()]
        assert labels and all(text.endswith("%") for text in labels), labels
