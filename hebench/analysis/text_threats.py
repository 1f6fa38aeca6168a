"""Text leakage per threat model: which adversary each text view stands for, each configuration's most revealing
view per adversary (the exact-sequence rate, Wilson 95 %), and the rule and test behind what that adversary
obtains; :mod:`hebench.analysis.threats` judges them per adversary, as it judges images.

A language-model run's views (:mod:`hebench.inversion.text.campaign`) are the honest-but-curious aggregator's
(``plain``, ``dp``, ``encrypted``, ``selective``, ``secagg-sum``, and under secret sharing its one share,
``shares-1``) and three single-update threat models: ``host-he-colluder`` (a client colluding with the aggregator:
it holds host-HE's key set), ``shares-all`` (all K share holders) and ``model-inconsistency`` (a lying secagg
aggregator); under client-level DP each is read from the privatized uploads (``dp+shares-all``, ...), the same
adversary. Their keys are :func:`hebench.protections.threats.threat_key`'s, as image attacks write them, so the
threat matrix, its charts and the terminal place text and images under the same adversaries.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hebench.analysis.earned import LIVE, Earned
from hebench.analysis.summary import SummaryRow
from hebench.analysis.text_leakage import TextVerdict
from hebench.protections import find_mode
from hebench.protections.params import ModeParams
from hebench.protections.threats import Adversary, NotDefined, Strategy, threat_key

AGGREGATOR = Adversary.AGGREGATOR.value  # the default threat model (hebench.analysis.options.DEFAULT_THREAT)
# view -> (adversary, k, strategy); k None: every share holder of the configuration (its K)
VIEW_THREATS: dict[str, tuple[Adversary, int | None, Strategy | None]] = {
    "host-he-colluder": (Adversary.COLLUDING_CLIENTS, 1, None),
    "shares-all": (Adversary.SHARE_HOLDERS, None, None),
    "model-inconsistency": (Adversary.MALICIOUS, 0, Strategy.MODEL_INCONSISTENCY),
}


@dataclass(frozen=True)
class TextThreat:
    """One text verdict under the threat model its view stands for, with the rule's test (None: the aggregator's
    own view, or a mode with no rule for it)."""

    key: str
    verdict: TextVerdict
    earned: Earned | None = None


def _params(row: SummaryRow | None) -> ModeParams | None:
    spec = find_mode(row.mode) if row is not None else None
    if row is None or spec is None:
        return None
    try:
        return spec.parse_params(dict(row.params or {}))
    except ValueError:  # a record written under other params' rules: the mode's defaults do not apply
        return None


def holders_of(row: SummaryRow | None) -> int:
    """The configuration's share holders (secret sharing's K, from its params or the mode's default; 0 for a mode
    without them)."""
    params = _params(row)
    return 0 if params is None or not params.extra_aggregators else 1 + params.extra_aggregators


def _base(view: str) -> str:
    """The mode's view a text view is: ``dp+shares-all`` (DP on secret sharing) is ``shares-all``'s adversary's."""
    return view.removeprefix("dp+")


def _parts(view: str, holders: int) -> tuple[Adversary, int, Strategy | None]:
    adversary, k, strategy = VIEW_THREATS.get(_base(view), (Adversary.AGGREGATOR, 0, None))
    return adversary, holders if k is None else k, strategy


def threat_of(view: str, holders: int = 0) -> str:
    """The threat key a text view stands for (with or without DP): ``colluding-clients:1``, ``share-holders:3``,
    ``malicious-aggregator:model-inconsistency`` or ``aggregator`` (every other view)."""
    adversary, k, strategy = _parts(view, holders)
    return threat_key(adversary.value, k, strategy.value if strategy else None)


def _earned(row: SummaryRow | None, view: str, holders: int) -> Earned | None:
    """The mode's rule for the adversary a single-update view stands for: what it obtains and the test that shows
    it; live, as the text views go through the protocol's real path (``conduits``: he-key, shares, secagg)."""
    if _base(view) not in VIEW_THREATS or row is None or (spec := find_mode(row.mode)) is None:
        return None
    adversary, k, strategy = _parts(view, holders)
    try:
        outcome = spec.outcome(adversary, k=k, strategy=strategy, clients=k + 2, holders=holders, params=_params(row))
    except (NotDefined, ValueError):
        return None
    return Earned(outcome.evidence, outcome.obtains.value, LIVE)


def text_threats(rows: Sequence[SummaryRow], verdicts: Sequence[TextVerdict]) -> list[TextThreat]:
    """Every verdict under its threat model (the row gives secret sharing's K and the mode's rule)."""
    by_config = {r.config: r for r in rows}
    out = []
    for v in verdicts:
        row = by_config.get(v.config)
        holders = holders_of(row)
        out.append(TextThreat(threat_of(v.view, holders), v, _earned(row, v.view, holders)))
    return out


def _revealing(t: TextThreat) -> tuple[float, float, float]:
    v = t.verdict
    return (v.exact.value, v.rouge1 or 0.0, v.token_recall or 0.0)


def most_revealing(config: str, threats: Sequence[TextThreat], key: str = AGGREGATOR) -> TextThreat | None:
    """``config``'s most revealing view under threat ``key`` over the batch sizes attacked (the highest
    exact-sequence rate, then ROUGE-1, then token recall); None: no view of it scored under that adversary."""
    mine = [t for t in threats if t.verdict.config == config and t.key == key and t.verdict.exact.n]
    return max(mine, key=_revealing, default=None)


def text_leakage_under(row: SummaryRow, verdicts: Sequence[TextVerdict], key: str = AGGREGATOR) -> TextVerdict | None:
    """A language model's leakage to threat ``key`` (default: the honest-but-curious aggregator, its own view or
    its one share): the exact-sequence rate of its most revealing view there."""
    best = most_revealing(row.config, text_threats([row], [v for v in verdicts if v.config == row.config]), key)
    return None if best is None else best.verdict


def text_cell_words(t: TextThreat) -> str:
    """``2/2 sequences exact (34–100 %), ROUGE-1 1.00, obtains every-update``: a matrix cell."""
    v = t.verdict
    e = v.exact
    parts = [f"{e.k}/{e.n} sequences exact ({100 * e.lo:.0f}–{100 * e.hi:.0f} %)"]
    if v.rouge1 is not None:
        parts.append(f"ROUGE-1 {v.rouge1:.2f}")
    if e.k == 0 and v.outcome != "recovered":
        parts.append(v.outcome_words)
    if t.earned is not None and t.earned.obtains:
        parts.append(f"obtains {t.earned.obtains}")
    return ", ".join(parts)
