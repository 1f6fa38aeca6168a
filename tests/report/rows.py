"""A SummaryRow with only what a report test sets."""

from __future__ import annotations

from hebench.analysis.summary import SummaryRow


def row(config: str, mode: str, adapter: str = "x", **fields) -> SummaryRow:
    return SummaryRow(
        config=config,
        mode=mode,
        runtime="hebench",
        adapter=adapter,
        packing="flat",
        params={},
        selective=None,
        parameters=100,
        rounds_done=1,
        **fields,
    )
