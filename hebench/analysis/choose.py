""" "What to choose": the Pareto set over costs (and leakage where attacks ran), printed only on evidence.

No winner per metric: an option is listed when no other is clearly better on one measure
without being clearly worse on another. "Clearly" means outside a 95 % interval (see
:mod:`hebench.analysis.pareto`: Welch over steady rounds for costs, Newcombe on Wilson intervals
for images recovered). Where no difference is clear the set is not printed; instead the
report says what more (rounds, images) would decide it. Unstable figures, and round times
measured under CPU contention, are left out of the ranking and named.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hebench.analysis.options import COSTS, LEAKAGE, Option
from hebench.analysis.pareto import Decision, Interval, decide, dominated_by, pareto_set, would_dominate

WORDS = {"cpu": "host CPU", "total_cpu": "total CPU", "bytes": "upload", "time": "round time"}
NAMES = {
    "cpu": "host CPU",
    "total_cpu": "total CPU (host + engine)",
    "bytes": "upload bytes",
    "time": "round time",
    LEAKAGE: "leakage (images recovered)",
}
SHORT = {"cpu": "host CPU", "total_cpu": "total CPU", "bytes": "upload", "time": "round time", LEAKAGE: "leakage"}
CONTENTION = "round time"


def measure_name(choice: Choice, measure: str) -> str:
    """A measure's name in a verdict; leakage names what was counted: images recovered, text sequences recovered
    exactly, or both where a comparison mixes image and language runs."""
    if measure != LEAKAGE:
        return NAMES[measure]
    kinds = {o.leakage_kind for o in choice.options if o.recovered}
    counted = [w for k, w in (("ssim", "images recovered"), ("text", "sequences recovered exactly")) if k in kinds]
    return f"leakage ({'; '.join(counted)})" if counted and counted != ["images recovered"] else NAMES[LEAKAGE]


def pct(v: float) -> str:
    return f"{100 * v:.0f} %"


def recovered_text(r: Interval) -> str:
    """``3/10 recovered (11–60 %)``: images recovered with the Wilson 95 % interval."""
    return f"{r.k}/{r.n} recovered ({100 * r.lo:.0f}–{100 * r.hi:.0f} %)"


def ssim_text(v: Interval) -> str:
    """``SSIM 0.42 ± 0.59`` (mean ± std over images and seeds); one image has no spread to show."""
    mean = round(v.value, 2) + 0.0  # + 0.0: no "-0.00"
    if v.n == 1 or v.sd is None:
        return f"SSIM {mean:.2f}"
    return f"SSIM {mean:.2f} ± {v.sd:.2f}"


def text_leakage_text(o: Option) -> str:
    """``0/1 sequences exact (0–79 %), ROUGE-1 0.00``: a language model's leakage (its most revealing aggregator
    view's exact-sequence rate, Wilson 95 %)."""
    v = o.leakage
    assert v is not None
    rouge = "" if o.rouge1 is None else f", ROUGE-1 {o.rouge1:.2f}"
    return f"{v.k}/{v.n} sequences exact ({100 * v.lo:.0f}–{100 * v.hi:.0f} %){rouge}"


def _figure(measure: str, v: Interval) -> str:
    text = f"{v.value:.3g}× {WORDS[measure]}"
    return text + (f" (unstable: {v.lo:.3g}–{v.hi:.3g} over steady rounds)" if v.unstable else "")


def option_line(o: Option, measures: Sequence[str]) -> str:
    """``name: 4.66× host CPU, 25.9× upload, SSIM 0.02 ± 0.01, 0/10 recovered (0–28 %)`` (and what is missing)."""
    parts = []
    for m in measures:
        if m == LEAKAGE:
            if o.leakage is None:
                parts.append("not attacked")
                continue
            if o.leakage_kind == "text":
                parts.append(text_leakage_text(o))
                continue
            parts.append(ssim_text(o.leakage))
            if o.recovered is not None:
                parts.append(recovered_text(o.recovered))
        elif (v := o.costs.get(m)) is not None:
            parts.append(_figure(m, v))
    if o.accuracy_loss is not None and not o.baseline:
        parts.append(f"accuracy {round(-o.accuracy_loss, 4) + 0.0:+.4f} vs raw")
    return f"{o.name}: " + ", ".join(parts)


def measures_of(options: Sequence[Option]) -> list[str]:
    """Costs some option has (total CPU only where an engine makes it differ from host CPU), and leakage
    when any option was attacked."""
    shown = [
        c
        for c in COSTS
        if any(o.costs.get(c) is not None for o in options) and (c != "total_cpu" or any(o.engines for o in options))
    ]
    return shown + ([LEAKAGE] if any(o.leakage is not None for o in options) else [])


@dataclass(frozen=True)
class Choice:
    """The Pareto set over the measured protections, with what it rests on."""

    measures: list[str]  # ranked
    unranked: dict[str, str]  # measure -> why it is left out of the ranking
    options: list[Option]  # measured protections (raw and modelled rows left out)
    members: list[str]  # names in the set
    dominated: dict[str, list[str]]  # name -> the names that dominate it
    pending: dict[str, list[tuple[str, list[tuple[str, Decision]]]]] = field(default_factory=dict)
    decided: bool = False  # some difference between two of them is clear (or there is one): the set says something
    thin: list[str] = field(default_factory=list)  # costs measured over one round only: no spread

    @property
    def table(self) -> dict[str, dict[str, Interval | None]]:
        return {o.name: o.measures for o in self.options}

    @property
    def settled(self) -> list[str]:
        """Members no other option might dominate on more evidence: what to choose (and what the chart rings).
        A member that is in the set only for want of evidence (figures no spread yet can tell apart, e.g. a run
        of one round beside a steady one) is named apart, never recommended."""
        return [m for m in self.members if m not in self.pending]


def decide_set(options: Sequence[Option]) -> Choice:
    """The Pareto set over the measured, non-baseline options, and whether any difference is clear."""
    measured = [o for o in options if not o.modelled and not o.baseline]
    measures = measures_of([o for o in options if not o.modelled])
    unranked: dict[str, str] = {}
    if "time" in measures and any(o.contended for o in measured):
        unranked["time"] = (
            "wall times measured under CPU contention (load above the cores, or more party processes than "
            "cores) include waiting for a core"
        )
    elif "time" in measures and any(o.contended is None for o in measured):
        unranked["time"] = "whether the wall times include waiting for a core is not known here"
    if LEAKAGE in measures and not any(o.recovered for o in measured):
        unranked[LEAKAGE] = "these attack records do not say how many images were recovered"
    ranked = [m for m in measures if m not in unranked]
    table = {o.name: o.measures for o in measured}
    members = pareto_set(table, ranked)
    dominated = {n: dominated_by(table, n, ranked) for n in table if n not in members}
    pending: dict[str, list[tuple[str, list[tuple[str, Decision]]]]] = {}
    for name in members:
        for other in table:
            if other != name and (needs := would_dominate(table[other], table[name], ranked)):
                pending.setdefault(name, []).append((other, needs))
    # a cost no configuration has a spread for (one round) can rank nothing, and every set depends on it
    thin = [m for m in ranked if m != LEAKAGE and all((v := o.costs.get(m)) is None or v.n < 2 for o in measured)]
    decided = not thin and (
        len(table) < 2  # one option is its own set; two or more need a clear difference
        or any(
            decide(table[a].get(m), table[b].get(m)).status == "clear"
            for a in table
            for b in table
            if a < b
            for m in ranked
        )
    )
    return Choice(ranked, unranked, measured, members, dominated, pending, decided, thin)


def rounds_said(options: Sequence[Option], span: str) -> str:
    """``3 steady round(s) each``, or said plainly where some figures include the warm-up round (no steady round
    yet), so the evidence line agrees with the tables and the notes."""
    cold = [o.name for o in options if o.cold]
    if not cold:
        return f"{span} steady round(s) each"
    if len(cold) == len(options):
        return f"{span} round(s) each, the first (warm-up) round included: no steady round yet"
    return f"{span} steady round(s) each; {', '.join(cold)}: the first (warm-up) round included, no steady round yet"


def evidence_line(choice: Choice) -> str:
    """Which interval each verdict uses, on how many rounds and images."""
    parts = []
    rounds = sorted({v.n for o in choice.options for m in choice.measures if m != LEAKAGE and (v := o.costs.get(m))})
    if rounds:
        span = f"{rounds[0]}" if len(rounds) == 1 else f"{rounds[0]}–{rounds[-1]}"
        parts.append(f"costs by Welch's 95 % interval over per-round values ({rounds_said(choice.options, span)})")
    images = sorted({o.recovered.n for o in choice.options if o.recovered and o.leakage_kind != "text"})
    if LEAKAGE in choice.measures and images:
        span = f"{images[0]}" if len(images) == 1 else f"{images[0]}–{images[-1]}"
        parts.append(
            "leakage by images recovered (SSIM ≥ 0.6), Newcombe's 95 % interval on their Wilson intervals "
            f"({span} image(s) each)"
        )
    sequences = sorted({o.recovered.n for o in choice.options if o.recovered and o.leakage_kind == "text"})
    if LEAKAGE in choice.measures and sequences:
        span = f"{sequences[0]}" if len(sequences) == 1 else f"{sequences[0]}–{sequences[-1]}"
        parts.append(
            "text leakage by sequences recovered exactly, Newcombe's 95 % interval on their Wilson intervals "
            f"({span} sequence(s) each)"
        )
    return "Evidence: " + "; ".join(parts) + "." if parts else ""


def _needs(decisions: Sequence[tuple[str, Decision]]) -> str:
    return ", ".join(f"{SHORT[m]}: {d.needs() or 'over 1,000 more ' + d.unit}" for m, d in decisions)


def pending_lines(choice: Choice) -> list[str]:
    """One line per member another option might dominate, if the undecided differences held."""
    out = []
    for name, others in choice.pending.items():
        out.append(
            f"Not enough evidence whether {name} is dominated: "
            + "; ".join(f"by {other} ({_needs(needs)} would decide it)" for other, needs in others)
            + "."
        )
    return out


def choose(options: Sequence[Option]) -> list[str]:
    """The lines of "what to choose" for a set of configurations (one run's, or several runs')."""
    measured = [o for o in options if not o.modelled]
    measures = measures_of(measured)
    out = []
    # raw is the reference every cost is a multiple of, not a protection to choose
    for o in measured:
        if o.baseline:
            out.append(f"Reference, unprotected (not a choice): {option_line(o, measures)}.")
    if LEAKAGE not in measures:
        out.append("No attack ran, so leakage is unknown: the set is over costs only.")
    choice = decide_set(options)
    if not choice.options or not measures:
        return out
    if line := evidence_line(choice):
        out.append(line)
    for m, why in choice.unranked.items():
        out.append(f"Not ranked on {measure_name(choice, m)}: {why}; the figures are shown, not compared.")
    by_name = {o.name: o for o in choice.options}
    if not choice.decided:
        why = (
            f"one {'round' if any(o.cold for o in choice.options) else 'steady round'} per configuration gives "
            f"{', '.join(measure_name(choice, m) for m in choice.thin)} no spread, so "
            "no cost difference can count (at least 1 more round would give one)"
            if choice.thin
            else f"no difference between these {len(choice.options)} configurations is clear at 95 %"
        )
        out.append(f"Not enough evidence for a Pareto set: {why}. Their figures:")
        out += [option_line(o, measures) for o in choice.options]
        out += pending_lines(choice)
        out += _apart(options, choice, measures)
        return out
    if not choice.settled:  # every member might yet be dominated: the set says nothing on this evidence
        out.append(
            "Not enough evidence for a Pareto set: every configuration that is not clearly dominated might yet be. "
            "Their figures:"
        )
        out += [option_line(by_name[name], measures) for name in choice.members]
        out += pending_lines(choice)
        out += _apart(options, choice, measures)
        return out
    over = ", ".join(measure_name(choice, m) for m in choice.measures)
    out.append(
        f"Pareto set over {over} — no other configuration is clearly "
        f"better on one without being clearly worse on another ({len(choice.settled)} of {len(choice.options)}):"
    )
    out += [option_line(by_name[name], measures) for name in choice.settled]
    undecided = [name for name in choice.members if name in choice.pending]
    if undecided:
        out.append("Not dominated only for want of evidence (not in the set, not ringed):")
        out += [option_line(by_name[name], measures) for name in undecided]
    if choice.dominated:
        out.append(
            "Dominated (another is clearly better on one measure and not clearly worse on any): "
            + "; ".join(f"{n} (by {', '.join(by)})" for n, by in choice.dominated.items())
            + "."
        )
    out += pending_lines(choice)
    out += _apart(options, choice, measures)
    return out


def _apart(options: Sequence[Option], choice: Choice, measures: Sequence[str]) -> list[str]:
    """Unstable figures, unattacked and modelled configurations: named, never ranked."""
    out = []
    unstable = [
        f"{o.name} ({NAMES[m]})"
        for o in choice.options
        for m in choice.measures
        if (v := o.measures.get(m)) and v.unstable
    ]
    if unstable:
        out.append(
            "Left out of the ranking, too noisy (range over steady rounds above half the mean): "
            + ", ".join(unstable)
            + "; rerun on a quieter machine or with more rounds."
        )
    if LEAKAGE in choice.measures and any(o.leakage is None for o in choice.options):
        out.append("A configuration with no attack has unknown leakage: it is neither dominated nor dominating on it.")
    modelled = [o for o in options if o.modelled]
    if modelled:
        out.append(
            "Modelled, not measured (kept out of the set): "
            + "; ".join(option_line(o, measures_of([o])) for o in modelled)
            + "."
        )
    return out


def library_interval(rec: Mapping[str, Any], kind: str) -> Interval:
    """A library benchmark's figure with its evidence: encrypt µs per value over repeats (Welch; unstable
    as the benchmark flags it), or bytes per value between a fresh and a recompressed ciphertext (exact)."""
    if kind == "bytes":
        b = rec["bytes"]
        sizes = [b["fresh_per_value"], b.get("recompressed_per_value", b["fresh_per_value"])]
        return Interval(b["fresh_per_value"], min(sizes), max(sizes))
    op = rec["operations"]["encrypt"]
    stats, per_value = op["wall_s"], op["wall_s_per_value"] * 1e6
    scale = per_value / stats["median"] if stats.get("median") else 0.0
    return Interval(
        per_value,
        stats["min"] * scale,
        stats["max"] * scale,
        unstable=bool(stats.get("unstable")),
        sd=float(stats.get("stdev") or 0.0) * scale,
        n=int(stats.get("n") or 1),
        unit="repeats",
    )


def choose_library(libraries: Sequence[Mapping[str, Any]], size: int) -> list[str]:
    """The Pareto set of HE adapters at ``size`` values over encryption time and ciphertext size."""
    recs = [r for r in libraries if r["size"] == size and r["adapter"] != "plain"]
    if not recs:
        return []
    measures = ("encrypt", "bytes")
    table = {r["adapter"]: {m: library_interval(r, m) for m in measures} for r in recs}
    best = pareto_set(table, measures)
    fastest = min(
        (n for n in table if not table[n]["encrypt"].unstable), key=lambda n: table[n]["encrypt"].value, default=None
    )

    def line(name: str) -> str:
        enc, size_b = table[name]["encrypt"], table[name]["bytes"]
        slower = ""
        if fastest and name != fastest and not enc.unstable:
            slower = f" ({enc.value / table[fastest]['encrypt'].value:.3g}× {fastest})"
        return (
            f"{name}: {enc.value:.3g} µs/value encrypt"
            + (" (unstable: not ranked on it)" if enc.unstable else slower)
            + f", {size_b.value:.1f} B/value"
        )

    repeats = sorted({v.n for v in (t["encrypt"] for t in table.values())})
    out = [
        f"At {size:,} values on this host, Pareto set over encryption time and ciphertext size (time: Welch's 95 % "
        f"interval over {'–'.join(map(str, dict.fromkeys([repeats[0], repeats[-1]])))} repeats; bytes: exact, "
        "fresh vs recompressed): " + "; ".join(map(line, best)) + "."
    ]
    rest = [n for n in table if n not in best]
    if rest:
        out.append(
            f"Dominated at {size:,} values: "
            + "; ".join(f"{n} (by {', '.join(dominated_by(table, n, measures))})" for n in rest)
            + "."
        )
    unstable = [n for n in table if table[n]["encrypt"].unstable]
    if unstable:
        out.append(
            f"Left out of the ranking on encryption time at {size:,} values, too noisy (the benchmark flags it "
            f"unstable): {', '.join(unstable)}; rerun `hebench compare libraries` on a quieter machine."
        )
    return out
