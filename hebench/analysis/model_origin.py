"""Where a run's models start from, beside their accuracy or perplexity: pretrained centrally, or random."""

from __future__ import annotations

from collections.abc import Sequence

from hebench.analysis.summary import SummaryRow


def origin_notes(rows: Sequence[SummaryRow]) -> list[str]:
    """One note per model and origin: which configurations it covers (all of them, or their labels) and where the
    starting weights come from (rows whose records do not say are left out)."""
    groups: dict[tuple[str, str], list[str]] = {}
    for r in rows:
        if r.model and r.model_origin:
            groups.setdefault((r.model, r.model_origin), []).append(r.config)
    notes = []
    for (model, origin), configs in groups.items():
        where = "every configuration" if len(configs) == len(rows) else ", ".join(configs)
        notes.append(f"model {model} ({where}): {origin}")
    return notes
