"""Verdicts per threat model: "what to choose" for each adversary the run attacked with, a matrix configuration ×
threat model → the best attack's leakage, and DP's bound beside its measured success. Every cell and line carries
its evidence: images recovered with their Wilson interval, what the adversary obtained (a rule of the mode, with
the red-team test that earns it), and whether the attacked view was obtained live (the protocol running with the
adversary's party in it) or declared (built from the rule). The report draws them
(:mod:`hebench.report.threat_charts`), the terminal prints them (:mod:`hebench.cli.render.threats`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from hebench.analysis.choose import choose, recovered_text
from hebench.analysis.defended import attack_name, defence, held_by_rule, rate_defence
from hebench.analysis.earned import DECLARED, LIVE, Earned
from hebench.analysis.options import DEFAULT_THREAT, Option, best_attack, recovered_interval
from hebench.analysis.pareto import Interval
from hebench.analysis.summary import SummaryRow
from hebench.analysis.text_threats import TextThreat, most_revealing, text_cell_words
from hebench.results.records import AttackSummaryRecord

NOT_ATTACKED = "–"
COUNTED_TEXT = "sequences recovered exactly"


def threat_words(key: str) -> str:
    """A threat key in words: ``colluding-clients:2`` → ``aggregator + 2 colluding clients``."""
    adversary, *rest = key.split(":")
    k = next((int(r) for r in rest if r.isdigit()), 0)
    strategy = next((r for r in rest if not r.isdigit()), "")
    words = {
        "aggregator": "honest-but-curious aggregator",
        "colluding-clients": f"aggregator + {k} colluding client{'s' if k != 1 else ''}",
        "key-holder": "aggregator + a holder of the secret key (an engine, the decryptor)",
        "share-holders": f"{k} colluding share holders",
        "malicious-aggregator": f"malicious aggregator ({strategy.replace('-', ' ')})",
        "observer": "outside network observer",
    }
    return words.get(adversary, key)


def what_was_seen(key: str = DEFAULT_THREAT) -> str:
    """What the attack reconstructed from, in a caption's words: ``what that configuration's aggregator saw`` for
    the honest-but-curious aggregator, ``what an outside network observer read on that configuration's wire``, ..."""
    adversary = key.split(":")[0]
    if adversary == "aggregator":
        return "what that configuration's aggregator saw"
    if adversary == "observer":
        return "what an outside network observer read on that configuration's wire"
    if adversary == "share-holders":
        return f"what {threat_words(key)} held in that configuration"
    return f"what the {threat_words(key)} obtained in that configuration"


def threat_keys(attacks: Sequence[AttackSummaryRecord], text: Sequence[TextThreat] = ()) -> list[str]:
    """The threat models the attacks ran under (image attacks, and a language model's text views), today's default
    first."""
    keys = list(dict.fromkeys([*(a.threat_key for a in attacks if not a.dry_run), *(t.key for t in text)]))
    return sorted(keys, key=lambda k: (k != DEFAULT_THREAT, keys.index(k)))


def earned(a: AttackSummaryRecord) -> Earned | None:
    """The evidence behind an attack's view, and whether that view was obtained live (None: no rule named)."""
    if not a.evidence:
        return None
    return Earned(a.evidence, a.obtains, LIVE if a.conduit else DECLARED)


@dataclass(frozen=True)
class Cell:
    text: str  # what the table shows
    ssim: float | None  # the best attack's mean SSIM (CSV)
    recovered: str | None  # "k/n" (CSV)
    earned: Earned | None = None  # the test that earns the cell, and whether its view was obtained live
    exact: Interval | None = None  # a language model's: sequences recovered exactly, k of n (Wilson 95 %)

    @property
    def value(self) -> float | None:
        """What the CSV holds: the mean SSIM (images), or the exact-sequence rate (text)."""
        return self.exact.value if self.exact is not None else self.ssim


def text_cell(config: str, text: Sequence[TextThreat], threat: str) -> Cell:
    """A language model's cell: its most revealing view under ``threat`` (exact sequences, Wilson 95 %)."""
    best = most_revealing(config, text, threat)
    if best is None:
        return Cell(NOT_ATTACKED, None, None)
    e = best.verdict.exact
    return Cell(text_cell_words(best), None, f"{e.k}/{e.n}", best.earned, e)


def cell(
    config: str,
    configs: Sequence[str],
    attacks: Sequence[AttackSummaryRecord],
    threat: str,
    text: Sequence[TextThreat] = (),
) -> Cell:
    """The best attack's leakage against ``config`` under ``threat``, with what the adversary obtained; a
    language model's from its text views (``text``)."""
    best = best_attack(config, configs, attacks, threat)
    if best is None:
        return text_cell(config, text, threat)
    ssim = float(best.scores["ssim"]["mean"])
    rate = recovered_interval(best)
    parts = [f"SSIM {round(ssim, 2) + 0.0:.2f}"]
    if rate is not None:
        parts.append(recovered_text(rate))
    if best.obtains:
        parts.append(f"obtains {best.obtains}")
    if best.detected:
        parts.append("stopped by a defence")
    k = f"{rate.k}/{rate.n}" if rate is not None else None
    return Cell(", ".join(parts), ssim, k, earned(best))


def footnotes(cells: Sequence[Sequence[Cell]]) -> dict[Earned, int]:
    """A reference number per distinct evidence of the matrix's cells (row by row, from 1)."""
    refs: dict[Earned, int] = {}
    for row in cells:
        for c in row:
            if c.earned is not None and c.earned not in refs:
                refs[c.earned] = len(refs) + 1
    return refs


def matrix(
    rows: Sequence[SummaryRow], attacks: Sequence[AttackSummaryRecord], text: Sequence[TextThreat] = ()
) -> tuple[list[str], list[list[Cell]]]:
    """(threat keys, one row of cells per configuration) — empty when only the default threat model ran."""
    keys = threat_keys(attacks, text)
    if keys == [DEFAULT_THREAT] or not keys:
        return [], []
    configs = [r.config for r in rows]
    return keys, [[cell(c, configs, attacks, k, text) for k in keys] for c in configs]


def evidence_lines(attacks: Sequence[AttackSummaryRecord], text: Sequence[TextThreat] = ()) -> list[str]:
    """One line per threat model and what the adversary obtained where: the rule and the test that shows it."""
    seen: dict[tuple[str, str], list[str]] = {}
    for a in attacks:
        proof = earned(a)
        if a.dry_run or a.threat_key == DEFAULT_THREAT or proof is None:
            continue
        stopped = f"; stopped: {a.detected}" if a.detected else ""
        key = (a.threat_key, f"obtains {a.obtains} ({proof.how}; {a.evidence}){stopped}")
        seen.setdefault(key, []).append(a.config or a.plan)
    for t in text:
        if t.key != DEFAULT_THREAT and t.earned is not None:
            key = (t.key, f"obtains {t.earned.obtains} ({t.earned.how}; {t.earned.evidence})")
            seen.setdefault(key, []).append(t.verdict.config)
    return [
        f"{threat_words(threat)}: {', '.join(dict.fromkeys(configs))} — {what}"
        for (threat, what), configs in seen.items()
    ]


def _reference(attacks: Sequence[AttackSummaryRecord], config: str, attack: str, batch: int) -> Any:
    return next(
        (
            a
            for a in attacks
            if a.config == config
            and a.threat_key == DEFAULT_THREAT
            and (a.attack, a.batch_size) == (attack, batch)
            and not a.dry_run
            and "ssim" in a.scores
        ),
        None,
    )


def threat_verdict_lines(
    attacks: Sequence[AttackSummaryRecord], reference: str = "raw", text: Sequence[TextThreat] = ()
) -> list[str]:
    """Per threat model other than the default, attack and batch size: which configurations defended against
    that adversary (images recovered clearly below the ``reference`` configuration's under the same adversary,
    Newcombe 95 % on Wilson intervals), which did not, and where the evidence is too thin, what would decide it;
    then the same for a language model's text views (:func:`text_verdict_lines`)."""
    out = []
    done = [a for a in attacks if not a.dry_run and "ssim" in a.scores and a.threat_key != DEFAULT_THREAT]
    for group in dict.fromkeys((a.threat_key, a.attack, a.batch_size) for a in done):
        mine = [a for a in done if (a.threat_key, a.attack, a.batch_size) == group]
        base, under = next((a for a in mine if a.config == reference), None), "the same adversary"
        if base is None:  # the adversary needs parties raw has not (share or key holders): raw's aggregator sees it all
            base, under = _reference(attacks, reference, group[1], group[2]), "the honest-but-curious aggregator"
        verdicts: dict[tuple[str, str], list[str]] = {}
        for a in mine:
            if a is base:
                continue
            d = held_by_rule(defence(a, base), a.obtains, a.evidence)
            stopped = f"; stopped: {a.detected}" if a.detected else ""
            verdicts.setdefault((d.verdict, d.text + stopped), []).append(a.config or a.plan)
        if not verdicts:
            continue
        against = f"against {reference}'s under {under}" if base is not None else f"no {reference} attacked"
        out.append(
            f"{threat_words(group[0])}, {attack_name(mine[0])} at batch {group[2]} (images recovered at SSIM ≥ "
            f"0.6, {against}) — "
            + "; ".join(
                f"{verdict}: {', '.join(configs)} ({'each ' if len(configs) > 1 else ''}{text})"
                for (verdict, text), configs in verdicts.items()
            )
            + "."
        )
    return out + text_verdict_lines(text, reference)


def _text_reference(text: Sequence[TextThreat], key: str, attack: str, batch: int, reference: str) -> TextThreat | None:
    return next(
        (
            t
            for t in text
            if t.key == key
            and t.verdict.exact.n
            and (t.verdict.config, t.verdict.attack, t.verdict.batch_size) == (reference, attack, batch)
        ),
        None,
    )


def text_verdict_lines(text: Sequence[TextThreat], reference: str = "raw") -> list[str]:
    """Per threat model other than the default, text attack and victim batch size: which language-model
    configurations defended against that adversary (sequences recovered exactly clearly below the ``reference``
    configuration's, Newcombe 95 % on Wilson intervals over sequences; raw's aggregator view where raw gives that
    adversary no view of its own, as its aggregator already holds the whole update), which did not, and where the
    evidence is too thin, what more sequences would decide it."""
    out = []
    scored = [t for t in text if t.verdict.exact.n and t.key != DEFAULT_THREAT]
    for key, attack, batch in dict.fromkeys((t.key, t.verdict.attack, t.verdict.batch_size) for t in scored):
        mine = [t for t in scored if (t.key, t.verdict.attack, t.verdict.batch_size) == (key, attack, batch)]
        base, under = _text_reference(text, key, attack, batch, reference), "the same adversary"
        if base is None:
            base = _text_reference(text, DEFAULT_THREAT, attack, batch, reference)
            under = "the honest-but-curious aggregator"
        verdicts: dict[tuple[str, str], list[str]] = {}
        for t in mine:
            if t is base:
                continue
            d = rate_defence(t.verdict.exact, None if base is None else base.verdict.exact, COUNTED_TEXT, "no sequence")
            if t.earned is not None:
                d = held_by_rule(d, t.earned.obtains, t.earned.evidence, t.verdict.outcome_words)
            verdicts.setdefault((d.verdict, d.text), []).append(t.verdict.config)
        if not verdicts:
            continue
        against = f"against {reference}'s under {under}" if base is not None else f"no {reference} attacked"
        name = "exact span" if attack == "span" else f"text {attack}"
        out.append(
            f"{threat_words(key)}, {name} attack at batch {batch} ({COUNTED_TEXT}: same tokens, same order; "
            f"{against}) — "
            + "; ".join(
                f"{verdict}: {', '.join(configs)} ({'each ' if len(configs) > 1 else ''}{text})"
                for (verdict, text), configs in verdicts.items()
            )
            + "."
        )
    return out


def dp_bound_lines(attacks: Sequence[AttackSummaryRecord]) -> list[str]:
    """DP rows: the reconstruction bound the noise implies, beside what the attack recovered."""
    out = []
    for a in attacks:
        b = a.dp_bound
        if not b or a.dry_run:
            continue
        eps = b.get("epsilon")
        by_eps = b.get("bound_from_epsilon")
        eps_text = ""
        if eps is not None and by_eps is not None:
            eps_text = f"; from ε = {eps:.3g} alone (δ = {b['delta']:g}): {by_eps:.3g}"
        if b.get("evidence"):  # what the adversary obtains under that noise, earned by a red-team test
            eps_text += f"; the noised update it obtains: {b['evidence']}"
        out.append(
            f"{a.plan} ({threat_words(a.threat_key)}): {b['verdict']} — the most any attack can reach, from its "
            f"noise (μ = {b['mu']:.3g}, baseline κ ≤ {b['kappa']:.3g} from {b['kappa_pairs']} public images; "
            f"ReRo via f-DP, Kaissis et al. 2023, Hayes et al. 2023){eps_text}"
        )
    return out


@dataclass(frozen=True)
class ThreatView:
    """One threat model's chart inputs and its "what to choose"."""

    key: str
    title: str
    choose: list[str]


def per_threat(
    options_of: Callable[[str], list[Option]],
    attacks: Sequence[AttackSummaryRecord],
    text: Sequence[TextThreat] = (),
) -> list[tuple[ThreatView, list[Option]]]:
    """For each threat model other than the default: its options (``options_of(threat)``) and what to choose."""
    out = []
    for key in threat_keys(attacks, text):
        if key == DEFAULT_THREAT:
            continue
        options = options_of(key)
        out.append((ThreatView(key, threat_words(key), choose(options)), options))
    return out


@dataclass(frozen=True)
class ThreatTable:
    """The matrix configuration × threat model as the report shows it (``shown``, and per cell the reference of the
    test that earns it, ``refs``, listed in ``notes``) and writes it (``values``)."""

    header: list[str]
    values: list[list[Any]]  # per cell the best attack's mean SSIM, or text's exact-sequence rate (None: not attacked)
    shown: list[list[str]]
    keys: list[str]  # the threat keys of the columns after the first
    refs: list[list[int | None]]  # per configuration and threat model: its evidence's reference (None: none)
    notes: list[tuple[int, Earned]]  # every reference, in order
    images: bool = False  # some cell is an image attack's (mean SSIM, images recovered)
    text: bool = False  # some cell is a language model's (sequences recovered exactly)


def threat_table(
    rows: Sequence[SummaryRow], attacks: Sequence[AttackSummaryRecord], text: Sequence[TextThreat] = ()
) -> ThreatTable | None:
    """The matrix with its header in words; None when only the honest-but-curious aggregator attacked."""
    keys, cells = matrix(rows, attacks, text)
    if not keys:
        return None
    refs = footnotes(cells)
    return ThreatTable(
        ["configuration", *(threat_words(k) for k in keys)],
        [[r.config, *(c.value for c in row)] for r, row in zip(rows, cells, strict=True)],
        [[r.config, *(c.text for c in row)] for r, row in zip(rows, cells, strict=True)],
        keys,
        [[None if c.earned is None else refs[c.earned] for c in row] for row in cells],
        [(ref, proof) for proof, ref in refs.items()],
        any(c.ssim is not None for row in cells for c in row),
        any(c.exact is not None for row in cells for c in row),
    )


def threat_lines(attacks: Sequence[AttackSummaryRecord], text: Sequence[TextThreat] = ()) -> list[str]:
    """Below the matrix: per threat model which configurations defended, the rule and test behind what each
    adversary obtains, and DP's bounds."""
    return [*threat_verdict_lines(attacks, text=text), *evidence_lines(attacks, text), *dp_bound_lines(attacks)]
