""" "What to choose": the Pareto set over costs (and leakage where attacks ran), each option's costs in one line.

No winner per metric: an option is listed when no other is clearly better on every
measure at once. Values whose spreads overlap are called ties; figures too noisy to
rank on are marked unstable and never decide anything.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hebench.report.options import COSTS, LEAKAGE, SSIM_TIE, Option
from hebench.report.pareto import Interval, dominated_by, pareto_set, ties

WORDS = {"cpu": "raw CPU", "bytes": "raw bytes", "time": "round time", LEAKAGE: "SSIM"}
NAMES = {"cpu": "host CPU", "bytes": "upload bytes", "time": "round time", LEAKAGE: "leakage (SSIM)"}


def _figure(measure: str, v: Interval) -> str:
    text = f"SSIM {v.value:.2f} ± {(v.hi - v.lo) / 2:.2f}" if measure == LEAKAGE else f"{v.value:.3g}× {WORDS[measure]}"
    return text + (f" (unstable: {v.lo:.3g}–{v.hi:.3g} over steady rounds)" if v.unstable else "")


def option_line(o: Option, measures: Sequence[str]) -> str:
    """``name: 2.8× raw bytes, 611× raw CPU, 9.1× round time, SSIM 0.02 ± 0.01`` (and what is missing)."""
    parts = []
    for m in measures:
        v = o.leakage if m == LEAKAGE else o.costs.get(m)  # shown with the spread over images, not the tie band
        if v is not None:
            parts.append(_figure(m, v))
        elif m == LEAKAGE:
            parts.append("not attacked")
    if o.accuracy_loss is not None and not o.baseline:
        parts.append(f"accuracy {round(-o.accuracy_loss, 4) + 0.0:+.4f} vs raw")
    return f"{o.name}: " + ", ".join(parts)


def measures_of(options: Sequence[Option]) -> list[str]:
    """Costs some option has, and leakage when any option was attacked."""
    shown = [c for c in COSTS if any(o.costs.get(c) is not None for o in options)]
    return shown + ([LEAKAGE] if any(o.leakage is not None for o in options) else [])


def choose(options: Sequence[Option]) -> list[str]:
    """The lines of "what to choose" for a set of configurations (one run's, or several runs')."""
    measured = [o for o in options if not o.modelled]
    measures = measures_of(measured)
    out = []
    # raw is the reference every cost is a multiple of, not a protection to choose: with a weak or noisy attack
    # its leakage interval overlaps everything, and being cheapest it would then "dominate" every protection
    for o in measured:
        if o.baseline:
            out.append(f"Reference, unprotected (not a choice): {option_line(o, measures)}.")
    if LEAKAGE not in measures:
        out.append("No attack ran, so leakage is unknown: the set is over costs only.")
    measured = [o for o in measured if not o.baseline]
    if not measured or not measures:
        return out
    table = {o.name: o.measures for o in measured}
    by_name = {o.name: o for o in measured}
    best = pareto_set(table, measures)
    out += [
        f"Pareto set over {', '.join(NAMES[m] for m in measures)} — no other configuration is clearly "
        f"better on all of them at once ({len(best)} of {len(measured)}):"
    ]
    out += [option_line(by_name[name], measures) for name in best]
    rest = [n for n in table if n not in best]
    if rest:
        out.append(
            "Dominated (something else is at least as good on every measure and clearly better on one): "
            + "; ".join(f"{n} (by {', '.join(dominated_by(table, n, measures))})" for n in rest)
            + "."
        )
    for m in measures:
        for group in ties(table, best, m):
            if not all(by_name[n].baseline for n in group):  # raw rows of several runs: 1× by definition
                why = f"means within {2 * SSIM_TIE:g}" if m == LEAKAGE else "spreads overlap"
                out.append(f"Tie on {NAMES[m]} ({why}): {' and '.join(group)}.")
    unstable = [f"{n} ({NAMES[m]})" for n in table for m in measures if (v := table[n].get(m)) and v.unstable]
    if unstable:
        out.append(
            "Unstable figures (range over steady rounds above half their mean), ranked as ties with anything: "
            + ", ".join(unstable)
            + "."
        )
    if any(o.leakage is None for o in measured) and LEAKAGE in measures:
        out.append(
            "A configuration with no attack counts as leaking more than any attacked one: its leakage is unknown."
        )
    modelled = [o for o in options if o.modelled]
    if modelled:
        out.append(
            "Modelled, not measured (kept out of the set): "
            + "; ".join(option_line(o, measures_of([o])) for o in modelled)
            + "."
        )
    return out


def library_interval(rec: Mapping[str, Any], kind: str) -> Interval:
    """A library benchmark's figure with its spread: encrypt µs per value over repeats, or bytes per value
    between a fresh and a recompressed ciphertext."""
    if kind == "bytes":
        b = rec["bytes"]
        sizes = [b["fresh_per_value"], b.get("recompressed_per_value", b["fresh_per_value"])]
        return Interval(b["fresh_per_value"], min(sizes), max(sizes))
    op = rec["operations"]["encrypt"]
    stats, per_value = op["wall_s"], op["wall_s_per_value"] * 1e6
    scale = per_value / stats["median"] if stats.get("median") else 0.0
    return Interval(per_value, stats["min"] * scale, stats["max"] * scale, unstable=bool(stats.get("unstable")))


def choose_library(libraries: Sequence[Mapping[str, Any]], size: int) -> list[str]:
    """The Pareto set of HE adapters at ``size`` values over encryption time and ciphertext size."""
    recs = [r for r in libraries if r["size"] == size and r["adapter"] != "plain"]
    if not recs:
        return []
    table = {
        r["adapter"]: {"encrypt": library_interval(r, "encrypt"), "bytes": library_interval(r, "bytes")} for r in recs
    }
    best = pareto_set(table, ("encrypt", "bytes"))

    def line(name: str) -> str:
        enc, size_b = table[name]["encrypt"], table[name]["bytes"]
        return (
            f"{name}: {enc.value:.3g} µs/value encrypt"
            + (" (unstable)" if enc.unstable else "")
            + f", {size_b.value:.1f} B/value"
        )

    out = [
        f"At {size:,} values on this host, Pareto set over encryption time and ciphertext size: "
        + "; ".join(map(line, best))
        + "."
    ]
    for measure, word in (("encrypt", "encryption time"), ("bytes", "ciphertext size")):
        for group in ties(table, best, measure):
            out.append(f"Tie on {word} at {size:,} values (spreads overlap): {' and '.join(group)}.")
    return out
