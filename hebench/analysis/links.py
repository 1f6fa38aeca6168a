"""What to choose on each link: the protections by steady round time there, with their ratio to raw on that link
and the evidence (measured or modelled, how many steady rounds). Round time only: what each protects against is
the cost–leakage verdict's (:mod:`hebench.analysis.choose`)."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from hebench.links.rows import LinkRow
from hebench.results import units as U


def short_protection(protection: str) -> str:
    """A protection's name without its parameters (``host-he/tenseal-ckks``)."""
    return re.sub(r"\[.*?\]", "", protection)


def time_to_accuracy_text(row: LinkRow) -> str:
    t = row.time_to_accuracy
    if t is None:
        return U.MISSING
    kind = "modelled" if t.modelled else "measured"
    return f"{t.target:g} at round {t.round + 1}: {U.fmt_seconds(t.wall_s)} ({kind})"


def choose_per_link(rows: Sequence[LinkRow]) -> list[str]:
    """Per link: the protections by steady round time, with their ratio to raw on that link and the evidence."""
    lines = []
    links = list(dict.fromkeys(r.link for r in rows))
    for link in links:
        here = [r for r in rows if r.link == link and r.round_wall_s]
        raw = next((r for r in here if r.baseline), None)
        protected = sorted((r for r in here if not r.baseline), key=lambda r: r.round_wall_s or math.inf)
        if not protected:
            continue
        best = protected[0]
        kind = "modelled" if best.modelled else "measured"
        ratio = f", {best.round_wall_s / raw.round_wall_s:.2f}× raw" if raw and raw.round_wall_s else ""
        line = (
            f"On {link}: {short_protection(best.protection)} has the shortest round of the protections "
            f"({U.fmt_seconds(best.round_wall_s)}{ratio}; {kind}, mean of {best.steady_rounds} steady round(s))"
        )
        if len(protected) > 1:
            rest = ", ".join(f"{short_protection(r.protection)} {U.fmt_seconds(r.round_wall_s)}" for r in protected[1:])
            line += f"; then {rest}"
        if min(r.steady_rounds for r in protected) < 2:
            line += ". Thin evidence: fewer than 2 steady rounds; run more rounds to decide"
        reached = [r for r in here if r.time_to_accuracy is not None]
        if reached:
            first = min(reached, key=lambda r: r.time_to_accuracy.wall_s)  # type: ignore[union-attr]
            line += (
                f". First to the target accuracy: {short_protection(first.protection)} ({time_to_accuracy_text(first)})"
            )
        lines.append(line + ". Round time only: what each protects against is on the cost–leakage chart.")
    return lines
