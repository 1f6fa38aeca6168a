"""The per-link table ``hebench run`` prints after the summary when configurations ran on links."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from rich import box
from rich.table import Table

from hebench.links.rows import link_rows
from hebench.results import units as U
from hebench.results.records import Record


def links_table(records: Iterable[Record], keys: Mapping[str, str]) -> Table | None:
    """Round wall on each configuration's link, a training client's time held by it against its compute CPU,
    and time-to-accuracy; None when nothing ran on links."""
    rows = link_rows(records)
    if not rows:
        return None
    modelled = any(r.modelled for r in rows)  # the " m" mark, explained only where some row carries it
    table = Table(
        title="on the links, per steady round" + (" (m: modelled, not measured)" if modelled else ""),
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        title_justify="left",
    )
    table.add_column("config", no_wrap=True)
    table.add_column("link", overflow="fold", max_width=22)
    for col in ("round\nwall", "client\ntransfer", "client\ncompute", "target\nreached"):
        table.add_column(col, justify="right", no_wrap=True)
    for r in rows:
        wall = U.fmt_seconds(r.round_wall_s) + (" m" if r.modelled else "")
        tta = r.time_to_accuracy
        reached = U.MISSING if tta is None else f"r{tta.round + 1} {U.fmt_seconds(tta.wall_s)}"
        table.add_row(
            keys.get(r.config, r.config),
            f"{r.link} ({r.emulation})",
            wall,
            U.fmt_seconds(r.client_transfer_s),
            U.fmt_seconds(r.client_compute_cpu_s),
            reached,
        )
    return table
