"""What a leakage score cannot say by itself, said beside it (report and terminal alike).

VIFp (pixel-domain visual information fidelity) is not bounded by 1: above 1, the reconstruction carries more
local contrast than the original where the two correlate. Records scored before #40 computed it on [0, 1] pixels
with sewar's visual-noise variance, which is set for 8-bit pixels: there, a noise-like reconstruction of a
low-contrast image scores above 1 (failed secagg reconstructions at SSIM 0.03–0.07 scored 2–3). hebench now scores
it on the 8-bit scale (:func:`hebench.inversion.scoring.metrics.vifp`); older figures are shown as recorded, marked.
"""

from __future__ import annotations

from collections.abc import Sequence

from hebench.results.records import AttackSummaryRecord

MARK = "†"  # beside a VIFp above 1, explained by vifp_note


def vifp_above_one(attack: AttackSummaryRecord) -> bool:
    """The attack's mean VIFp exceeds 1."""
    vifp = attack.scores.get("vifp")
    return isinstance(vifp, dict) and vifp.get("mean") is not None and float(vifp["mean"]) > 1.0


def vifp_note(attacks: Sequence[AttackSummaryRecord]) -> list[str]:
    """One note when some attack's mean VIFp exceeds 1: which, at what SSIM, and how to read it."""
    high = [a for a in attacks if vifp_above_one(a)]
    if not high:
        return []
    listed = ", ".join(f"{a.plan} {float(a.scores['vifp']['mean']):.2f}" for a in high)
    ssims = [float(a.scores["ssim"]["mean"]) for a in high if "ssim" in a.scores]
    at = f" at SSIM {min(ssims):.2f}–{max(ssims):.2f}" if ssims else ""
    noise_like = bool(ssims) and max(ssims) < 0.2
    reading = (
        "at so low an SSIM the reconstruction is noise: read it as no fidelity, not as better than the original"
        if noise_like
        else "above 1, the reconstruction has more local contrast than the original where they correlate"
    )
    return [
        f"{MARK} VIFp above 1 ({listed}){at}: VIFp is not bounded by 1; {reading}. Records scored before hebench "
        "scored VIFp on the 8-bit scale its noise variance is set for (#40) lift noise-like reconstructions of "
        "low-contrast images above 1; `hebench attack` on the run scores them again"
    ]
