"""The report's threat-model parts of one run: the matrix configuration × threat model (shown and as CSV), one
cost–leakage chart and "what to choose" per threat model other than the default, and the lines below them.

The verdicts are :mod:`hebench.analysis.threats`'; this module only draws and lays them out.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from hebench.analysis.options import Option
from hebench.analysis.summary import SummaryRow
from hebench.analysis.threats import dp_bound_lines, per_threat, threat_lines, threat_table
from hebench.report.leakage_chart import chart_caption, chart_size, cost_leakage
from hebench.results.records import AttackSummaryRecord


def threat_section(
    rows: Sequence[SummaryRow],
    attacks: Sequence[AttackSummaryRecord],
    options_of: Callable[[str], list[Option]],
    add_figure: Callable[[str, Callable, tuple[float, float]], str],
    table: Callable[[str, list[str], list[list[Any]], list[list[str]]], dict],
    prefix: str,
) -> dict[str, Any]:
    """``threat_matrix`` (None when only the honest-but-curious aggregator attacked), ``threats`` (a title,
    chart, caption and "what to choose" per other threat model) and ``threat_lines`` (verdicts, evidence, DP)."""
    matrix = threat_table(rows, attacks)
    if matrix is None:
        return {"threat_matrix": None, "threats": [], "threat_lines": dp_bound_lines(attacks)}
    threats = []
    for i, (view, options) in enumerate(per_threat(options_of, attacks)):
        chart = add_figure(f"{prefix}-threat-{i}", cost_leakage(options), chart_size(options))
        caption = chart_caption(options, threat=view.key)
        threats.append(
            {"key": view.key, "title": view.title, "chart": chart, "caption": caption, "choose": view.choose}
        )
    return {
        "threat_matrix": table(f"{prefix}-threats", matrix.header, matrix.values, matrix.shown),
        "threats": threats,
        "threat_lines": threat_lines(attacks),
    }
