"""The report's dropouts section: each protection's cost per round against the share of clients that dropped,
accuracy against rounds with dropouts, and a table per configuration (hebench.faults).

The dropout share on the x axis is measured (1 - arrived / selected, over the configuration's rounds), never
the configured probability. Configurations whose labels share the part before ``@`` (``ckks@0``, ``ckks@30``)
are one protection's line. Cost: the aggregator's CPU per round (every phase but waiting) and, for secagg,
its ``unmask`` phase: the recovery's work.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from hebench.report.load import Source
from hebench.results import units as U
from hebench.results.records import PartyRoundRecord, RoundRecord

HEADER = [
    "configuration",
    "dropped share",
    "rounds skipped",
    "aggregator CPU s / round",
    "recovery (unmask) CPU s / round",
    "final accuracy",
]


@dataclass(frozen=True)
class DropoutRow:
    config: str
    protection: str
    dropped_share: float
    skipped: int
    aggregator_cpu_s: float | None
    recovery_cpu_s: float | None
    accuracy: list[tuple[int, float | None, bool]]  # (round, accuracy, skipped)


def dropout_rows(records: Sequence[Any]) -> list[DropoutRow]:
    """One row per configuration of a run with faults (none when no round recorded who arrived)."""
    rounds = [r for r in records if isinstance(r, RoundRecord)]
    if not any(r.arrived is not None for r in rounds):
        return []
    aggregator = [r for r in records if isinstance(r, PartyRoundRecord) and r.role == "aggregator"]
    rows = []
    for config in dict.fromkeys(r.config for r in rounds):
        mine = sorted((r for r in rounds if r.config == config), key=lambda r: r.round)
        selected = sum(r.selected or 0 for r in mine)
        arrived = sum(r.arrived if r.arrived is not None else (r.selected or 0) for r in mine)
        cpu = [r.phases.cpu_s(exclude=("wait",)) for r in aggregator if r.config == config]
        unmask = [r.phases["unmask"].cpu_s for r in aggregator if r.config == config and "unmask" in r.phases]
        rows.append(
            DropoutRow(
                config=config,
                protection=config.split("@")[0],
                dropped_share=1 - arrived / selected if selected else 0.0,
                skipped=sum(bool(r.skipped) for r in mine),
                aggregator_cpu_s=sum(cpu) / len(cpu) if cpu else None,
                recovery_cpu_s=sum(unmask) / len(unmask) if unmask else None,
                accuracy=[(r.round, r.accuracy, bool(r.skipped)) for r in mine],
            )
        )
    return rows


def dropouts_figure(rows: list[DropoutRow]) -> Callable[[Figure], None]:
    def draw(fig: Figure) -> None:
        cost, acc = fig.subplots(1, 2)
        for protection in dict.fromkeys(r.protection for r in rows):
            points = sorted((r for r in rows if r.protection == protection), key=lambda r: r.dropped_share)
            xs = [100 * r.dropped_share for r in points if r.aggregator_cpu_s is not None]
            ys = [1000 * r.aggregator_cpu_s for r in points if r.aggregator_cpu_s is not None]
            if xs:
                cost.plot(xs, ys, marker="o", label=protection)
        cost.set_xlabel("clients dropped (% of selected, measured)")
        cost.set_ylabel("aggregator CPU per round (ms)")
        cost.legend(fontsize=7)
        for r in rows:
            if r.dropped_share == 0:
                continue
            line = acc.plot([a[0] for a in r.accuracy], [a[1] for a in r.accuracy], marker=".", label=r.config)
            skipped = [a for a in r.accuracy if a[2]]
            if skipped:
                acc.scatter([a[0] for a in skipped], [a[1] for a in skipped], marker="x", color=line[0].get_color())
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
        [r.config, r.dropped_share, r.skipped, r.aggregator_cpu_s, r.recovery_cpu_s, r.accuracy[-1][1]] for r in rows
    ]
    cells = [
        [
            r.config,
            f"{r.dropped_share:.0%}",
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
        "csv": write_csv(files / "dropouts.csv", HEADER, values).name,
        "figure": figure,
        "caption": (
            "Left: the aggregator's CPU per round (every phase but waiting, mean over rounds) against the share of "
            "selected clients that dropped (measured), one line per protection. Right: accuracy of the global model "
            "per round in the configurations with dropouts; crosses: rounds skipped (fewer than min_clients arrived)."
        ),
    }
