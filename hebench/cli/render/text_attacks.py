"""The text-leakage table ``hebench attack``, ``hebench run`` and ``hebench show`` print for a language-model suite or
run, and recovered text beside the original; the verdicts are :mod:`hebench.analysis.text_leakage`'s, as the report
shows them."""

from __future__ import annotations

from collections.abc import Sequence

from rich import box
from rich.console import Console
from rich.table import Table

from hebench.analysis.text_leakage import TextVerdict, text_verdicts
from hebench.results.records import TextAttackSummaryRecord


def _score(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def text_attack_table(verdicts: Sequence[TextVerdict]) -> Table:
    """One row per configuration, view and victim batch size: outcome (typed reason), exact sequences (Wilson 95 %),
    ROUGE-1 and ROUGE-L, token recall; narrow enough for 80 columns."""
    attacks = sorted({v.attack for v in verdicts}) or ["span"]
    names = " / ".join("exact span" if a == "span" else a for a in attacks)
    table = Table(box=box.SIMPLE_HEAD, title=f"text recovered from each view ({names} attack)")
    table.add_column("configuration · view", overflow="fold")
    for column in ("b", "outcome", "exact (95 %)", "R-1", "R-L", "tok R"):
        left = column in ("outcome", "exact (95 %)")
        table.add_column(column, justify="left" if left else "right", overflow="fold" if left else "ellipsis")
    for v in verdicts:
        table.add_row(
            f"{v.config} · {v.view}",
            str(v.batch_size),
            v.outcome_words,
            v.exact_words,
            _score(v.rouge1),
            _score(v.rougeL),
            _score(v.token_recall),
        )
    return table


def example_lines(verdicts: Sequence[TextVerdict], per_view: int = 1) -> list[str]:
    """Recovered text beside the original, for the first sequences of each view (repr: whitespace shown)."""
    lines = []
    for v in verdicts:
        head = f"{v.config} · {v.adversary}: {v.view} · b={v.batch_size}"
        if v.why:
            lines.append(f"{head}: nothing recovered in order ({v.why})")
            if not any(e.get("recovered") for e in v.examples):
                continue
        for e in v.examples[:per_view]:
            mark = "exact" if e.get("exact") else f"ROUGE-1 {e.get('rouge1', 0.0):.2f}"
            lines.append(f"{head} [{mark}]\n  original:  {e.get('original')!r}\n  recovered: {e.get('recovered')!r}")
    return lines


def print_text_leakage(out: Console, summaries: Sequence[TextAttackSummaryRecord]) -> None:
    """The table, then recovered text beside the original."""
    verdicts = text_verdicts(summaries)
    if not verdicts:
        return
    out.print(text_attack_table(verdicts))
    for line in example_lines(verdicts):
        out.print(line, highlight=False, markup=False, soft_wrap=True)
