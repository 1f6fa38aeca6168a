"""Privacy curves: attack summaries grouped so that one line is one attack and attacker against one kind of mask,
anchored at p = 0 (raw: nothing encrypted) and p = 1 (full HE) by the same attack's runs on those views."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hebench.analysis.defended import attack_name
from hebench.results.attack_views import View
from hebench.results.records import AttackSummaryRecord


def curve_label(a: AttackSummaryRecord) -> str:
    """What a curve holds fixed: mask, mask source, attack and attacker, threat model, batch size, data."""
    parts = [f"{a.mask} mask"]
    if a.mask_source:
        parts.append(f"{a.mask_source} map")
    parts.append(attack_name(a) + (f" ({a.attacker})" if a.attacker else ""))
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
        if a.mask and "ssim" in a.scores and not a.dry_run:
            out.setdefault(curve_label(a), []).append(a)
    return {label: sorted(points, key=lambda a: a.ratio) for label, points in sorted(out.items())}


@dataclass(frozen=True)
class Anchors:
    """The same attack on the unprotected view (p = 0) and on a fully encrypted one (p = 1), where it ran."""

    raw: AttackSummaryRecord | None
    full: AttackSummaryRecord | None


def _same_setting(a: AttackSummaryRecord, like: AttackSummaryRecord) -> bool:
    same = (a.attack, a.dataset, a.batch_size, a.threat, a.clients, a.local_steps)
    return not a.dp and same == (
        like.attack,
        like.dataset,
        like.batch_size,
        like.threat,
        like.clients,
        like.local_steps,
    )


def anchors(attacks: Sequence[AttackSummaryRecord], like: AttackSummaryRecord) -> Anchors:
    """p = 0 and p = 1 for a curve whose points are like ``like``: unmasked attacks with the same attack, data
    and batch size, on the raw view (ratio 0) and on an encrypted one (ratio 1)."""
    plain = [a for a in attacks if not a.mask and not a.dry_run and "ssim" in a.scores and _same_setting(a, like)]
    raw = next((a for a in plain if a.view == View.RAW and a.ratio == 0), None)
    full = next((a for a in plain if a.ratio >= 1.0 and a.view != View.RAW), None)
    return Anchors(raw, full)
