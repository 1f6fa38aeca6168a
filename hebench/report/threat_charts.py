"""The report's threat-model parts of one run: the matrix configuration × threat model (shown and as CSV), one
cost–leakage chart and "what to choose" per threat model other than the default, and the lines below them.

The verdicts are :mod:`hebench.analysis.threats`'; this module only draws and lays them out.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from hebench.analysis.options import Option
from hebench.analysis.summary import SummaryRow
from hebench.analysis.text_threats import TextThreat
from hebench.analysis.threats import Earned, dp_bound_lines, per_threat, threat_lines, threat_table
from hebench.report.leakage_chart import chart_caption, chart_size, cost_leakage
from hebench.results.records import AttackSummaryRecord


def threat_section(
    rows: Sequence[SummaryRow],
    attacks: Sequence[AttackSummaryRecord],
    options_of: Callable[[str], list[Option]],
    add_figure: Callable[[str, Callable, tuple[float, float]], str],
    table: Callable[[str, list[str], list[list[Any]], list[list[str]]], dict],
    prefix: str,
    text: Sequence[TextThreat] = (),
) -> dict[str, Any]:
    """``threat_matrix`` (None when only the honest-but-curious aggregator attacked; each cell with the reference of
    the test that earns it and whether its view was obtained live or declared, the references listed in ``notes``),
    ``threats`` (a title, chart, caption, "what to choose" and each configuration's evidence per other threat model)
    and ``threat_lines`` (verdicts, evidence, DP). ``text``: a language model's text views under the threat models
    they stand for (:mod:`hebench.analysis.text_threats`), judged on sequences recovered exactly."""
    matrix = threat_table(rows, attacks, text)
    if matrix is None:
        return {"threat_matrix": None, "threats": [], "threat_lines": dp_bound_lines(attacks)}
    notes = dict(matrix.notes)
    anchor = f"{prefix}-evidence"
    threats = []
    for i, (view, options) in enumerate(per_threat(options_of, attacks, text)):
        chart = add_figure(f"{prefix}-threat-{i}", cost_leakage(options), chart_size(options))
        caption = chart_caption(options, threat=view.key)
        column = matrix.keys.index(view.key)
        earned = [
            {"config": r.config, **_reference(ref, notes[ref], anchor)}
            for r, line in zip(rows, matrix.refs, strict=True)
            if (ref := line[column]) is not None
        ]
        threats.append(
            {
                "key": view.key,
                "title": view.title,
                "chart": chart,
                "caption": caption,
                "choose": view.choose,
                "earned": earned,
            }
        )
    shown = table(f"{prefix}-threats", matrix.header, matrix.values, matrix.shown)
    shown["cells"] = [
        [
            {"text": text, **({} if ref is None else _reference(ref, notes[ref], anchor))}
            for text, ref in zip(line[1:], refs, strict=True)
        ]
        for line, refs in zip(matrix.shown, matrix.refs, strict=True)
    ]
    shown["configs"] = [line[0] for line in matrix.shown]
    shown["notes"] = [{**_reference(ref, proof, anchor), "line": proof.line(ref)} for ref, proof in matrix.notes]
    shown["anchor"] = anchor
    shown["images"], shown["text"] = matrix.images, matrix.text  # what the caption describes
    return {"threat_matrix": shown, "threats": threats, "threat_lines": threat_lines(attacks, text)}


def _reference(ref: int, proof: Earned, anchor: str) -> dict[str, Any]:
    """A cell's short reference to the test that earns it: its number, the test's name and full path (a title),
    and whether the view was obtained live or declared."""
    return {"ref": ref, "name": proof.name, "title": proof.evidence, "how": proof.how, "id": f"{anchor}-{ref}"}
