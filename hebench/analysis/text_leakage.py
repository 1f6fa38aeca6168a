"""Text leakage as every output says it, computed once: each view's outcome (recovered, partial or failed, with its
typed reason), the sequences recovered exactly (k of n, Wilson 95 %), ROUGE-1/2/L and token precision/recall, and
each configuration's leakage for the cost-versus-leakage chart and "what to choose" (the exact-sequence rate of its
most revealing view per adversary: :mod:`hebench.analysis.text_threats`). ``hebench attack``, ``hebench
show``/``run``, the report and ``compare runs`` all read :func:`text_verdicts` and :func:`compare_text`; none judges
a text attack itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hebench.analysis.pareto import Interval
from hebench.analysis.success import newcombe, wilson
from hebench.results.records import TextAttackSummaryRecord

UNIT = "sequences"
LEAKAGE_WORDS = "sequences recovered exactly (same tokens, same order)"


@dataclass(frozen=True)
class TextVerdict:
    """One view of one configuration at one victim batch size, as every output states it."""

    config: str
    adversary: str
    view: str
    batch_size: int
    attack: str
    outcome: str  # recovered, partial, failed, or mixed (victim batches differ)
    reason: str | None  # the typed cause where not recovered (hebench.inversion.text.result.Why), else None
    why: str  # the cause with its numbers, in words
    exact: Interval  # sequences recovered exactly, k of n, Wilson 95 %
    rouge1: float | None
    rouge2: float | None
    rougeL: float | None
    token_precision: float | None
    token_recall: float | None
    examples: tuple[Mapping[str, Any], ...]
    outcomes: Mapping[str, int]

    @property
    def outcome_words(self) -> str:
        """``recovered``, ``partial: order-unavailable``, ``failed: adapter-rank``, ``recovered 1, failed 1``."""
        if self.outcome == "mixed":
            return ", ".join(f"{k} {v}" for k, v in sorted(self.outcomes.items()))
        return f"{self.outcome}: {self.reason}" if self.reason and self.outcome != "recovered" else self.outcome

    @property
    def exact_words(self) -> str:
        """``3/4 (30–95 %)``: exact sequences with the Wilson 95 % interval; ``-`` with none scored."""
        e = self.exact
        return f"{e.k}/{e.n} ({100 * e.lo:.0f}–{100 * e.hi:.0f} %)" if e.n else "-"

    @property
    def line(self) -> str:
        """The whole verdict in one line (``compare runs``, advice)."""
        scores = "" if self.rouge1 is None else f", ROUGE-1 {self.rouge1:.2f}"
        return f"{self.outcome_words}; {self.exact_words} exact{scores}"


def exact_interval(k: int, n: int) -> Interval:
    """Sequences recovered exactly: ``k`` of ``n`` with its Wilson 95 % interval (a rate: Newcombe decides)."""
    lo, hi = wilson(k, n)
    return Interval(k / n if n else 0.0, lo, hi, n=n, k=k, unit=UNIT)


def verdict(s: TextAttackSummaryRecord) -> TextVerdict:
    outcomes = dict(s.outcomes)
    outcome = next(iter(outcomes)) if len(outcomes) == 1 else ("mixed" if outcomes else "failed")
    reason = s.why.split(":", 1)[0].strip() or None if s.why else None
    return TextVerdict(
        s.config,
        s.adversary,
        s.view,
        s.batch_size,
        s.attack,
        outcome,
        reason,
        s.why,
        exact_interval(s.exact, s.sequences),
        s.rouge1,
        s.rouge2,
        s.rougeL,
        s.token_precision,
        s.token_recall,
        tuple(s.examples),
        outcomes,
    )


def text_verdicts(summaries: Iterable[TextAttackSummaryRecord]) -> list[TextVerdict]:
    """Every summary's verdict, latest per (configuration, view, batch size) (a resumed or repeated attack's)."""
    latest: dict[tuple[str, str, int], TextAttackSummaryRecord] = {}
    for s in summaries:
        latest[(s.config, s.view, s.batch_size)] = s
    return [verdict(s) for s in latest.values()]


@dataclass(frozen=True)
class TextComparison:
    """One view at one batch size in two runs."""

    config: str
    view: str
    batch_size: int
    a: TextVerdict | None
    b: TextVerdict | None
    verdict: str  # "same", "differs" (Newcombe's 95 % interval on the exact rates excludes 0), "not significant",
    # "only in A", "only in B"
    threat: str = "aggregator"  # the threat model the view stands for (hebench.analysis.text_threats)


def compare_text(a: Sequence[TextVerdict], b: Sequence[TextVerdict]) -> list[TextComparison]:
    """Each view's verdict in run A beside run B's; the exact-sequence rates compared on Newcombe's interval."""
    index_b = {(v.config, v.view, v.batch_size): v for v in b}
    out = []
    for va in a:
        key = (va.config, va.view, va.batch_size)
        vb = index_b.pop(key, None)
        out.append(TextComparison(*key, va, vb, "only in A" if vb is None else _differs(va, vb)))
    out += [TextComparison(*key, None, vb, "only in B") for key, vb in index_b.items()]
    return out


def _differs(a: TextVerdict, b: TextVerdict) -> str:
    if a.outcome_words == b.outcome_words and a.exact.k == b.exact.k and a.exact.n == b.exact.n:
        return "same"
    ka, na, kb, nb = a.exact.k or 0, a.exact.n, b.exact.k or 0, b.exact.n
    if not na or not nb:
        return "not significant"
    lo, hi = newcombe(kb, nb, ka, na)
    return "differs" if lo > 0 or hi < 0 else "not significant"
