"""The text-leakage table ``hebench attack`` prints for a language-model suite or run, and recovered text beside
the original."""

from __future__ import annotations

from typing import Any

from rich import box
from rich.table import Table


def _rate(summary: dict[str, Any]) -> str:
    n = summary["sequences"]
    if not n:
        return "-"
    return f"{summary['exact']}/{n} {100 * summary['exact_low']:.0f}–{100 * summary['exact_high']:.0f}%"


def _outcome(summary: dict[str, Any]) -> str:
    outcomes = summary["outcomes"]
    if len(outcomes) == 1:
        return next(iter(outcomes))
    return ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items()))


def text_attack_table(summaries: list[dict[str, Any]]) -> Table:
    """One row per configuration, view and victim batch size: outcome, exact sequences (Wilson 95 %), ROUGE-1 and
    ROUGE-L, token recall; narrow enough for 80 columns."""
    table = Table(box=box.SIMPLE_HEAD, title="text recovered from each view (exact span attack)")
    table.add_column("configuration · view", overflow="fold")
    for column in ("b", "outcome", "exact (95 %)", "R-1", "R-L", "tok R"):
        table.add_column(column, justify="left" if column in ("outcome", "exact (95 %)") else "right")
    for s in summaries:
        table.add_row(
            f"{s['config']} · {s['view']}",
            str(s["batch_size"]),
            _outcome(s),
            _rate(s),
            f"{s['rouge1']:.2f}",
            f"{s['rougeL']:.2f}",
            f"{s['token_recall']:.2f}",
        )
    return table


def example_lines(summaries: list[dict[str, Any]], per_view: int = 1) -> list[str]:
    """Recovered text beside the original, for the first sequences of each view (repr: whitespace shown)."""
    lines = []
    for s in summaries:
        head = f"{s['config']} · {s['adversary']}: {s['view']} · b={s['batch_size']}"
        if s["why"]:
            lines.append(f"{head}: nothing recovered in order ({s['why']})")
            if not any(e["recovered"] for e in s["examples"]):
                continue
        for e in s["examples"][:per_view]:
            mark = "exact" if e["exact"] else f"ROUGE-1 {e['rouge1']:.2f}"
            lines.append(f"{head} [{mark}]\n  original:  {e['original']!r}\n  recovered: {e['recovered']!r}")
    return lines
