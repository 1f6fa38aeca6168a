"""Privacy curves: attack summaries grouped so that one line is one attacker against one kind of mask."""

from __future__ import annotations

from collections.abc import Sequence

from hebench.results.records import AttackSummaryRecord


def curve_label(a: AttackSummaryRecord) -> str:
    """What a curve holds fixed: mask, mask source, attacker, threat model, batch size, data."""
    parts = [f"{a.mask} mask"]
    if a.mask_source:
        parts.append(f"{a.mask_source} map")
    if a.attacker:
        parts.append(a.attacker)
    if a.threat:
        parts.append(a.threat)
    if a.batch_size > 1:
        parts.append(f"batch {a.batch_size}")
    if a.dataset:
        parts.append(a.dataset)
    return ", ".join(parts)


def privacy_curves(attacks: Sequence[AttackSummaryRecord]) -> dict[str, list[AttackSummaryRecord]]:
    """Masked attack summaries with an SSIM score, by curve, each sorted by the fraction encrypted."""
    out: dict[str, list[AttackSummaryRecord]] = {}
    for a in attacks:
        if a.mask and "ssim" in a.scores:
            out.setdefault(curve_label(a), []).append(a)
    return {label: sorted(points, key=lambda a: a.ratio) for label, points in sorted(out.items())}
