"""The threat-model matrix in the terminal: configuration × adversary → the best attack's leakage, 80 columns wide.

Cells are the best attack's mean SSIM, the images it recovered (k/n; the report adds the Wilson interval) and [n],
the red-team test that earns the cell, listed under the table with how the view was obtained (live or declared);
a language model's cells are the sequences its text views gave back exactly (k/n with the Wilson 95 % interval).
Columns carry short codes explained under the table, as the report's matrix does in words.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rich import box
from rich.console import Console
from rich.table import Table

from hebench.analysis.summary import SummaryRow
from hebench.analysis.text_threats import TextThreat
from hebench.analysis.threats import (
    NOT_ATTACKED,
    Cell,
    dp_bound_lines,
    footnotes,
    matrix,
    threat_verdict_lines,
    threat_words,
)
from hebench.cli.render.lines import print_lines
from hebench.results.records import AttackSummaryRecord

CODES = {
    "aggregator": "hbc",
    "colluding-clients": "c{k}",
    "key-holder": "key",
    "share-holders": "sh{k}",
    "malicious-aggregator": "m-{s}",
    "observer": "obs",
}
TEXT_CELLS = "sequences recovered exactly (Wilson 95 %)"
STRATEGY = {"model-inconsistency": "inc", "trap-weights": "trap", "dropout-lie": "drop"}


def code(key: str) -> str:
    adversary, *rest = key.split(":")
    k = next((r for r in rest if r.isdigit()), "")
    strategy = next((STRATEGY.get(r, r) for r in rest if not r.isdigit()), "")
    return CODES.get(adversary, adversary).format(k=k, s=strategy)


def _shown(c: Cell, refs: Mapping[object, int]) -> str:
    ref = f" [{refs[c.earned]}]" if c.earned is not None else ""
    if c.exact is not None:  # text: sequences exact, k/n (Wilson 95 %)
        return f"{c.exact.k}/{c.exact.n} ({100 * c.exact.lo:.0f}–{100 * c.exact.hi:.0f}%)" + ref
    if c.ssim is None:
        return NOT_ATTACKED
    stopped = " stop" if "stopped" in c.text else ""
    return f"{c.ssim:.2f} {c.recovered or ''}{stopped}".strip() + ref


def _title(cells: Sequence[Sequence[Cell]]) -> str:
    """What the cells hold: images (mean SSIM, images recovered), text (sequences recovered exactly), or both."""
    images = any(c.ssim is not None for line in cells for c in line)
    text = any(c.exact is not None for line in cells for c in line)
    measures = [w for shown, w in ((images or not text, "mean SSIM, images recovered"), (text, TEXT_CELLS)) if shown]
    return "best attack by threat model: " + "; ".join(measures)


def print_threats(
    console: Console,
    rows: Sequence[SummaryRow],
    attacks: Sequence[AttackSummaryRecord],
    keys: Mapping[str, str],
    text: Sequence[TextThreat] = (),
) -> None:
    """The matrix (nothing when only the honest-but-curious aggregator attacked), its legend, per threat model
    which configurations defended (with the images behind it, or what would decide it), the red-team test behind
    each cell (what the adversary obtains, and whether the view was obtained live or declared), and DP's bounds.
    ``text``: a language model's text views under the threat models they stand for."""
    threats, cells = matrix(rows, attacks, text)
    if threats:
        refs = footnotes(cells)
        labels = [keys.get(r.config, r.config) for r in rows]
        shown = [[_shown(c, refs) for c in line] for line in cells]
        label_w = min(max(len(x) for x in [*labels, "config"]), 24)
        cell_w = max(len(x) for line in shown for x in line)
        fit = max(1, (console.width - label_w - 2) // (cell_w + 2))  # columns of cells that fit beside the labels
        for first in range(0, len(threats), fit):
            part = range(first, min(first + fit, len(threats)))
            table = Table(
                title=_title(cells)
                + (f" ({first // fit + 1} of {-(-len(threats) // fit)})" if len(threats) > fit else ""),
                box=box.SIMPLE_HEAD,
                pad_edge=False,
                title_justify="left",
            )
            table.add_column("config", no_wrap=True, max_width=label_w)
            for t in part:
                table.add_column(code(threats[t]), justify="right", no_wrap=True)
            for label, line in zip(labels, shown, strict=True):
                table.add_row(label, *(line[t] for t in part))
            console.print(table)
        legend = "; ".join(f"{code(t)}: {threat_words(t)}" for t in threats)
        legend += ' (– not attacked or not defined; "stop": a defence; [n]: the test that earns the cell, below)'
        print_lines(console, "threats", "bold", [legend])
        print_lines(console, "evidence", "dim", [proof.line(ref) for proof, ref in refs.items()])
        print_lines(console, "verdict", "bold", threat_verdict_lines(attacks, text=text))
    print_lines(console, "DP bound", "bold", dp_bound_lines(attacks))
