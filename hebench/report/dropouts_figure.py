"""The report's dropouts section: each protection's cost per round against the share of clients that dropped,
accuracy against rounds with dropouts, and a table per configuration (the figures: :mod:`hebench.analysis.dropouts`).

Rounds are numbered from 1, as the terminal's progress lines number them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator, PercentFormatter

from hebench.analysis.dropouts import DropoutRow, dropout_rows
from hebench.report.load import Source
from hebench.results import units as U

HEADER = [
    "configuration",
    "dropped share",
    "rounds skipped",
    "aggregator CPU s / round",
    "recovery (unmask) CPU s / round",
    "final accuracy",
]
CSV_HEADER = [*HEADER, "clients dropped", "clients selected"]


def dropouts_figure(rows: list[DropoutRow]) -> Callable[[Figure], None]:
    """Left: aggregator CPU per round against the measured dropped share (from 0 %, so one share is not drawn
    as a span of its own rounding); right: accuracy per round (numbered from 1, whole rounds only)."""

    def draw(fig: Figure) -> None:
        cost, acc = fig.subplots(1, 2)
        for protection in dict.fromkeys(r.protection for r in rows):
            points = sorted((r for r in rows if r.protection == protection), key=lambda r: r.dropped_share)
            xs = [100 * r.dropped_share for r in points if r.aggregator_cpu_s is not None]
            ys = [1000 * r.aggregator_cpu_s for r in points if r.aggregator_cpu_s is not None]
            if xs:
                cost.plot(xs, ys, marker="o", label=protection)
        top = max((100 * r.dropped_share for r in rows), default=0.0)
        cost.set_xlim(0, max(10.0, 1.15 * top))
        cost.set_ylim(bottom=0)
        cost.xaxis.set_major_formatter(PercentFormatter(decimals=0))
        cost.set_xlabel("clients dropped (of selected, measured)")
        cost.set_ylabel("aggregator CPU per round (ms)")
        cost.legend(fontsize=7)
        for r in rows:
            if r.dropped_share == 0:
                continue
            line = acc.plot([a[0] + 1 for a in r.accuracy], [a[1] for a in r.accuracy], marker=".", label=r.config)
            skipped = [a for a in r.accuracy if a[2]]
            if skipped:
                acc.scatter([a[0] + 1 for a in skipped], [a[1] for a in skipped], marker="x", color=line[0].get_color())
        acc.xaxis.set_major_locator(MaxNLocator(integer=True))
        acc.set_xlabel("round")
        acc.set_ylabel("accuracy")
        if acc.lines:
            acc.legend(fontsize=7)

    return draw


def dropouts_section(sources: Sequence[Source], figs: Any, files: Path, write_csv: Callable[..., Path]) -> dict | None:
    """The report's dropouts section (None: no run had faults)."""
    rows = [row for s in sources for row in dropout_rows(s.records)]
    if not rows:
        return None
    values = [
        [
            r.config,
            r.dropped_share,
            r.skipped,
            r.aggregator_cpu_s,
            r.recovery_cpu_s,
            r.accuracy[-1][1],
            r.dropped,
            r.selected,
        ]
        for r in rows
    ]
    cells = [
        [
            r.config,
            f"{r.dropped_share:.0%} ({r.dropped} of {r.selected})",
            str(r.skipped),
            U.fmt_seconds(r.aggregator_cpu_s),
            U.fmt_seconds(r.recovery_cpu_s),
            U.MISSING if r.accuracy[-1][1] is None else f"{r.accuracy[-1][1]:.3f}",
        ]
        for r in rows
    ]
    figure = figs.add("dropouts", dropouts_figure(rows), size=(8.5, 3.6))
    return {
        "header": HEADER,
        "rows": cells,
        "csv": write_csv(files / "dropouts.csv", CSV_HEADER, values).name,
        "figure": figure,
        "caption": (
            "Left: the aggregator's CPU per round (every phase but waiting, mean over rounds) against the share of "
            "selected clients that dropped (measured), one line per protection. Right: accuracy of the global model "
            "per round in the configurations with dropouts; crosses: rounds skipped (fewer than min_clients arrived)."
        ),
    }
