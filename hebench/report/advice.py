"""Remarks beside "what to choose", generated from the measured numbers (no canned verdicts).

The Pareto set itself comes from :mod:`hebench.report.choose`; these are the offload
saving, the accuracy cost, the library Pareto set and the selective-encryption curves.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hebench.report.choose import choose_library
from hebench.report.privacy_curves import privacy_curves
from hebench.results.records import AttackSummaryRecord
from hebench.results.summary import SummaryRow


def _mb(n: float) -> str:
    return f"{n / 1e6:.2f} MB"


def advise(
    rows: Sequence[SummaryRow], libraries: Sequence[Mapping[str, Any]], attacks: Sequence[AttackSummaryRecord]
) -> list[str]:
    out: list[str] = []
    raw = next((r for r in rows if r.is_baseline), None)
    for r in rows:
        if r.uses_engines and r.host_cpu_saved_vs_host_he is not None:
            time_ratio, saved = r.round_time_vs_host_he, r.host_cpu_saved_vs_host_he
            out.append(
                f"Offload ({r.config}) {'saves' if saved >= 0 else 'adds'} {abs(100 * saved):.0f} % host CPU "
                f"per round against host-side HE ({r.host_he_twin})"
                + (f", at {time_ratio:.2f}× its round time" if time_ratio else "")
                + (
                    f" and {_mb(r.host_engine_bytes_per_round)} of host↔engine traffic per round."
                    if r.host_engine_bytes_per_round
                    else "."
                )
            )
    errors = [r for r in rows if not r.is_baseline and r.max_abs_error is not None]
    if errors and raw is not None and raw.accuracy is not None:
        base = raw.accuracy
        worst = max(errors, key=lambda r: abs((r.accuracy or 0) - base))
        out.append(
            f"Accuracy cost of protection: at most {abs((worst.accuracy or 0) - base):.4f} "
            f"({worst.config}); largest error of the aggregate against plaintext FedAvg "
            f"{max(r.max_abs_error or 0.0 for r in errors):.1e}."
        )
    for size in sorted({rec["size"] for rec in libraries}):
        out += choose_library(libraries, size)
    raw_leak = next((a for a in attacks if a.view == "raw" or (a.ratio == 0 and a.mask)), None)
    if raw_leak and "ssim" in raw_leak.scores:
        leak = raw_leak.scores["ssim"]["mean"]
        for label, points in privacy_curves(attacks).items():
            defended = [a.ratio for a in points if a.scores["ssim"]["mean"] < 0.3 and a.ratio < 1.0]
            out.append(
                f"{label}: reconstruction SSIM {leak:.2f} with nothing encrypted; "
                + (
                    f"falls below 0.3 from p = {defended[0]:g} (in this setting only)."
                    if defended
                    else "stays at or above 0.3 for every p < 1 measured: in this setting (data, attacker, "
                    "mask source) only full encryption defended."
                )
            )
    return out
