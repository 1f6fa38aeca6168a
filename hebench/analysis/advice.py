"""Remarks beside "what to choose", generated from the measured numbers (no canned verdicts), each with its evidence.

The Pareto set itself comes from :mod:`hebench.analysis.choose`; these are offload against its
host-side twin, the accuracy cost, which protections defended against the attack that ran,
the library Pareto set and the selective-encryption curves.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hebench.analysis.choose import choose_library
from hebench.analysis.defended import attack_name, defence, raw_attack
from hebench.analysis.pareto import Decision, Interval, decide
from hebench.analysis.privacy_curves import anchors, privacy_curves
from hebench.analysis.summary import SummaryRow
from hebench.results.records import AttackSummaryRecord


def _mb(n: float) -> str:
    return f"{n / 1e6:.2f} MB"


def versus(a: Sequence[float], b: Sequence[float]) -> Decision:
    """Two configurations' per-steady-round values of one cost, compared by Welch's 95 % interval."""
    if not a or not b:
        return Decision(None, "unknown")
    return decide(Interval.of(a), Interval.of(b))


def said(d: Decision, contended: bool | None = False) -> str:
    """``clear``, ``not enough evidence: 3 more rounds would decide it``, ... for a figure in a sentence.
    ``contended``: the wall times include waiting for a core (None: not known, so not judged either)."""
    if contended is None:
        return "not ranked: the run's CPU contention is not known here"
    if contended:
        return "not ranked: wall time under CPU contention"
    if d.status == "clear":
        return "clear"
    if d.status == "too few":
        return f"not enough evidence: one round has no spread; {d.needs()} would decide it"
    if d.status == "undecided":
        return f"not enough evidence: {d.needs()} would decide it"
    return {
        "no difference": "no difference",
        "too small": "no clear difference: too small to decide in 1,000 more rounds",
        "unstable": "unstable: left out",
        "unknown": "not measured",
    }[d.status]


def offload_lines(rows: Sequence[SummaryRow], contended: bool | None = False) -> list[str]:
    """Offload against its host-side twin: host CPU, total CPU (host + engine) and round time, each judged
    (round time only when the run is known not to have been under CPU contention)."""
    out = []
    by_name = {r.config: r for r in rows}
    for r in rows:
        twin = by_name.get(r.host_he_twin or "")
        if not (r.uses_engines and twin and r.client_cpu_s_per_round and twin.client_cpu_s_per_round):
            continue
        host = r.client_cpu_s_per_round / twin.client_cpu_s_per_round
        parts = [
            f"host CPU {host:.2f}× ({'saves' if host < 1 else 'adds'} {abs(100 * (1 - host)):.0f} %; "
            f"{said(versus(r.client_cpu_s_rounds, twin.client_cpu_s_rounds))})"
        ]
        if r.total_cpu_s_per_round and twin.total_cpu_s_per_round:
            total = r.total_cpu_s_per_round / twin.total_cpu_s_per_round
            d = versus(r.total_cpu_s_rounds, twin.total_cpu_s_rounds)
            parts.append(f"total CPU, host + engine, {total:.2f}× ({said(d)})")
        if r.round_time_vs_host_he:
            d = versus(r.round_wall_s_rounds, twin.round_wall_s_rounds)
            parts.append(f"round time {r.round_time_vs_host_he:.2f}× ({said(d, contended)})")
        traffic = (
            f"; {_mb(r.host_engine_bytes_per_round)} of host↔engine traffic per round"
            if r.host_engine_bytes_per_round
            else ""
        )
        out.append(
            f"Offload ({r.config}) against host-side HE ({twin.config}), Welch 95 % over steady rounds: "
            + "; ".join(parts)
            + traffic
            + "."
        )
    return out


def accuracy_line(rows: Sequence[SummaryRow]) -> list[str]:
    raw = next((r for r in rows if r.is_baseline), None)
    errors = [r for r in rows if not r.is_baseline and r.max_abs_error is not None]
    if not errors or raw is None or raw.accuracy is None:
        return []
    base = raw.accuracy
    worst = max(errors, key=lambda r: abs((r.accuracy or 0) - base))
    return [
        f"Accuracy cost of protection: at most {abs((worst.accuracy or 0) - base):.4f} "
        f"({worst.config}); largest error of the aggregate against plaintext FedAvg over steady rounds "
        f"{max(r.max_abs_error or 0.0 for r in errors):.1e}."
    ]


def advise(rows: Sequence[SummaryRow], contended: bool = False) -> list[str]:
    """One run's remarks: offload against its twin, the accuracy cost."""
    return offload_lines(rows, contended) + accuracy_line(rows)


def library_advice(libraries: Sequence[Mapping[str, Any]]) -> list[str]:
    out: list[str] = []
    for size in sorted({rec["size"] for rec in libraries}):
        out += choose_library(libraries, size)
    return out


def defence_lines(attacks: Sequence[AttackSummaryRecord]) -> list[str]:
    """Per attack that ran: which protections defended (images recovered clearly below raw's), which did not;
    against the honest-but-curious aggregator (other threat models have their own sections)."""
    attacks = [a for a in attacks if a.threat_key == "aggregator"]
    out = []
    batches = len({a.batch_size for a in attacks if not a.dry_run}) > 1
    for name, batch in dict.fromkeys((a.attack, a.batch_size) for a in attacks if not a.dry_run):
        # each batch size against raw's at that batch size: a batch of 4 is no defence against raw's batch of 1
        mine = [
            a for a in attacks if (a.attack, a.batch_size) == (name, batch) and not a.dry_run and "ssim" in a.scores
        ]
        raw = raw_attack(mine)
        verdicts: dict[tuple[str, str], list[str]] = {}
        for a in mine:
            if a is raw or a.mask:
                continue
            d = defence(a, raw)
            verdicts.setdefault((d.verdict, d.text), []).append(a.plan)
        if not verdicts:
            continue
        out.append(
            f"Against {attack_name(mine[0])}{f' at batch {batch}' if batches else ''} (images recovered at SSIM ≥ 0.6, "
            "against raw's; Newcombe 95 % on Wilson intervals) — "
            + "; ".join(
                f"{verdict}: {', '.join(plans)} ({'each ' if len(plans) > 1 else ''}{text})"
                for (verdict, text), plans in verdicts.items()
            )
            + "."
        )
    return out


def privacy_advice(attacks: Sequence[AttackSummaryRecord]) -> list[str]:
    """Selective-encryption curves: which fractions encrypted defended, from p = 0 (raw) to p = 1 (full HE)."""
    out = []
    for label, points in privacy_curves(attacks).items():
        ends = anchors(attacks, points[0])
        raw = ends.raw or next((a for a in points if a.ratio == 0), None)
        if raw is None:
            out.append(f"{label}: no attack on the unprotected view (p = 0) ran, so no defence can be shown.")
            continue
        steps = [a for a in points if 0 < a.ratio < 1]
        full = next((a for a in points if a.ratio >= 1), None) or ends.full
        verdicts = [(f"p = {a.ratio:g}", defence(a, raw)) for a in steps]
        if full is not None:
            verdicts.append(("p = 1 (full HE)", defence(full, raw)))
        if not verdicts:
            continue
        text = "; ".join(f"{p}: {d.verdict} ({d.text})" for p, d in verdicts)
        partial = [d for _, d in verdicts[: len(steps)]]
        summary = ""
        if (
            full is not None
            and verdicts[-1][1].defended
            and partial
            and all(d.verdict == "not defended" for d in partial)
        ):
            summary = " In this setting (data, attack, mask source) only full encryption defended."
        else:
            tail = [i for i in range(len(verdicts)) if all(d.defended for _, d in verdicts[i:])]
            if tail:
                summary = f" Defended from {verdicts[tail[0]][0]} on (in this setting only)."
        out.append(f"{label}: {text}.{summary}")
    return out
