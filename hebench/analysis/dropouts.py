"""Clients that dropped out (hebench.faults), counted apart from the costs of those that uploaded.

Per configuration: the measured share of selected clients whose update never reached the aggregator (1 -
arrived / selected over its rounds, never the configured probability), the rounds skipped, the aggregator's
CPU per round and, for secagg, its ``unmask`` phase (the recovery's work), and accuracy per round. Configurations
whose labels share the part before ``@`` (``ckks@0``, ``ckks@30``) are one protection's line.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hebench.analysis.summary import SummaryRow
from hebench.results.records import PartyRoundRecord, RoundRecord


@dataclass(frozen=True)
class DropoutRow:
    config: str
    protection: str
    dropped_share: float
    selected: int  # client-rounds selected over the configuration's rounds
    dropped: int  # of those, the ones whose update did not arrive
    skipped: int
    aggregator_cpu_s: float | None
    recovery_cpu_s: float | None
    accuracy: list[tuple[int, float | None, bool]]  # (round, counted from 0; accuracy; skipped)


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
                selected=selected,
                dropped=selected - arrived,
                skipped=sum(bool(r.skipped) for r in mine),
                aggregator_cpu_s=sum(cpu) / len(cpu) if cpu else None,
                recovery_cpu_s=sum(unmask) / len(unmask) if unmask else None,
                accuracy=[(r.round, r.accuracy, bool(r.skipped)) for r in mine],
            )
        )
    return rows


def dropout_notes(rows: Sequence[SummaryRow]) -> list[str]:
    """One note naming each configuration where selected clients dropped out in the steady rounds, with how many:
    they are counted apart, and the per-client figures are over those that uploaded."""
    dropped = [f"{r.config} {r.dropped_clients} of {r.selected_clients}" for r in rows if r.dropped_clients]
    if not dropped:
        return []
    return [
        "selected clients that dropped out in the steady rounds (their update never reached the aggregator), "
        f"counted apart: {', '.join(dropped)}; per-client figures are over the clients that uploaded"
    ]
