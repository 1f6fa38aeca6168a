"""The threat-model matrix in the terminal: configuration × adversary → the best attack's leakage, 80 columns wide.

Cells are the best attack's mean SSIM and the images it recovered (k/n; the report adds the Wilson interval);
columns carry short codes explained under the table, as the report's matrix does in words.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rich import box
from rich.console import Console
from rich.table import Table

from hebench.report.threats import (
    NOT_ATTACKED,
    dp_bound_lines,
    evidence_lines,
    matrix,
    threat_verdict_lines,
    threat_words,
)
from hebench.results.records import AttackSummaryRecord
from hebench.results.summary import SummaryRow

CODES = {
    "aggregator": "hbc",
    "colluding-clients": "c{k}",
    "key-holder": "key",
    "share-holders": "sh{k}",
    "malicious-aggregator": "m-{s}",
    "observer": "obs",
}
STRATEGY = {"model-inconsistency": "inc", "trap-weights": "trap", "dropout-lie": "drop"}


def code(key: str) -> str:
    adversary, *rest = key.split(":")
    k = next((r for r in rest if r.isdigit()), "")
    strategy = next((STRATEGY.get(r, r) for r in rest if not r.isdigit()), "")
    return CODES.get(adversary, adversary).format(k=k, s=strategy)


def print_threats(
    console: Console,
    rows: Sequence[SummaryRow],
    attacks: Sequence[AttackSummaryRecord],
    keys: Mapping[str, str],
) -> None:
    """The matrix (nothing when only the honest-but-curious aggregator attacked), its legend, per threat model
    which configurations defended (with the images behind it, or what would decide it), the rule and test behind
    what each adversary obtains, and DP's bounds."""
    from hebench.cli.summary import print_lines

    threats, cells = matrix(rows, attacks)
    if threats:
        table = Table(
            title="best attack by threat model: mean SSIM, images recovered",
            box=box.SIMPLE_HEAD,
            pad_edge=False,
            title_justify="left",
        )
        table.add_column("config", no_wrap=True)
        for t in threats:
            table.add_column(code(t), justify="right", no_wrap=True)
        for row, line in zip(rows, cells, strict=True):
            shown = []
            for c in line:
                if c.ssim is None:
                    shown.append(NOT_ATTACKED)
                else:
                    stopped = " stop" if "stopped" in c.text else ""
                    shown.append(f"{c.ssim:.2f} {c.recovered or ''}{stopped}".strip())
            table.add_row(keys.get(row.config, row.config), *shown)
        console.print(table)
        legend = "; ".join(f"{code(t)}: {threat_words(t)}" for t in threats)
        print_lines(console, "threats", "bold", [legend + ' (– not attacked or not defined; "stop": a defence)'], keys)
        print_lines(console, "verdict", "bold", threat_verdict_lines(attacks), keys)
        print_lines(console, "evidence", "dim", evidence_lines(attacks), keys)
    print_lines(console, "DP bound", "bold", dp_bound_lines(attacks), keys)
