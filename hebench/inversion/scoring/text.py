"""Text-leakage scores of a reconstruction against the private sequences (the ``rouge-score`` package).

Every reference sequence is paired with at most one recovered sequence (the assignment that maximises the summed
ROUGE-1 F, Hungarian); an unpaired reference scores 0. Per reference: ROUGE-1/2/L F of its pair, and whether the
pair is exact (the same tokens in the same order). Over the batch: the exact-sequence rate and the rate of
references with ROUGE-1 >= ``SUCCESS_ROUGE1``, each with a 95 % Wilson interval over sequences; token precision
and recall over the bags of tokens (multisets: a token counts as often as it occurs on both sides; with no
sequences, the tokens the attack found by position). ROUGE runs on token ids (``t<id>`` words, whitespace-split,
no stemming), so it scores exactly what the attack recovered whatever the tokenizer; :func:`text_rouge` scores
plain strings the same way.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from hebench.analysis.success import wilson

SUCCESS_ROUGE1 = 0.99
KINDS = ("rouge1", "rouge2", "rougeL")


class _Whitespace:
    """rouge-score's tokenizer protocol: words as written (its default lowercases and drops non-alphanumerics)."""

    def tokenize(self, text: str) -> list[str]:
        return text.split()


def _scorer() -> Any:
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(list(KINDS), use_stemmer=False, tokenizer=_Whitespace())


def text_rouge(reference: str, candidate: str) -> dict[str, float]:
    """ROUGE-1/2/L F of ``candidate`` against ``reference`` (whitespace words, as written)."""
    scores = _scorer().score(reference, candidate)
    return {k: float(scores[k].fmeasure) for k in KINDS}


def _words(tokens: Sequence[int]) -> str:
    return " ".join(f"t{t}" for t in tokens)


@dataclass(frozen=True)
class TextScores:
    sequences: int  # references
    recovered: int  # sequences the attack returned
    exact: int  # references recovered exactly
    exact_low: float
    exact_high: float
    rouge1_success: int  # references with ROUGE-1 >= SUCCESS_ROUGE1
    rouge1_success_low: float
    rouge1_success_high: float
    rouge1: float  # means over references
    rouge2: float
    rougeL: float
    token_precision: float
    token_recall: float
    per_sequence: tuple[dict[str, float], ...]

    @property
    def exact_rate(self) -> float:
        return self.exact / self.sequences if self.sequences else 0.0

    def to_dict(self, per_sequence: bool = False) -> dict[str, Any]:
        out = asdict(self)
        out["exact_rate"] = self.exact_rate
        if not per_sequence:
            out.pop("per_sequence")
        return out


def _bag_scores(references: Sequence[Sequence[int]], claimed: Sequence[int]) -> tuple[float, float]:
    truth = Counter(t for ref in references for t in ref)
    got = Counter(claimed)
    hits = sum((truth & got).values())
    precision = hits / sum(got.values()) if got else 0.0
    recall = hits / sum(truth.values()) if truth else 0.0
    return precision, recall


def score_sequences(
    references: Sequence[Sequence[int]], recovered: Sequence[Sequence[int]], claimed_tokens: Sequence[int] | None = None
) -> TextScores:
    """Scores of ``recovered`` sequences against ``references`` (``claimed_tokens``: the bag for precision/recall;
    default every recovered token)."""
    from scipy.optimize import linear_sum_assignment

    scorer = _scorer()
    n, m = len(references), len(recovered)
    table = np.zeros((n, m, len(KINDS)))
    for i, ref in enumerate(references):
        for j, rec in enumerate(recovered):
            s = scorer.score(_words(ref), _words(rec))
            table[i, j] = [s[k].fmeasure for k in KINDS]
    rows, cols = linear_sum_assignment(-table[:, :, 0]) if n and m else ([], [])
    pair = dict(zip((int(r) for r in rows), (int(c) for c in cols), strict=True))
    per = []
    for i, ref in enumerate(references):
        j = pair.get(i)
        values = table[i, j] if j is not None else np.zeros(len(KINDS))
        exact = j is not None and list(recovered[j]) == list(ref)
        per.append({**{k: float(v) for k, v in zip(KINDS, values, strict=True)}, "exact": float(exact)})
    exact = sum(int(p["exact"]) for p in per)
    success = sum(p["rouge1"] >= SUCCESS_ROUGE1 for p in per)
    bag = claimed_tokens if claimed_tokens is not None else [t for rec in recovered for t in rec]
    precision, recall = _bag_scores(references, bag)

    def mean(k: str) -> float:
        return float(np.mean([p[k] for p in per])) if per else 0.0

    return TextScores(
        n,
        m,
        exact,
        *wilson(exact, n),
        success,
        *wilson(success, n),
        mean("rouge1"),
        mean("rouge2"),
        mean("rougeL"),
        precision,
        recall,
        tuple(per),
    )


def score_reconstruction(references: Sequence[Sequence[int]], reconstruction: Any) -> TextScores:
    """Scores of a :class:`~hebench.inversion.text.result.TextReconstruction` (its bag: sequences, else tokens)."""
    return score_sequences(references, reconstruction.token_lists, reconstruction.token_bag)


def pool(scores: Sequence[TextScores]) -> dict[str, Any]:
    """Several batches' scores as one: rates and Wilson intervals over every sequence, means over every sequence."""
    per = [p for s in scores for p in s.per_sequence]
    n = len(per)
    exact = sum(int(p["exact"]) for p in per)
    success = sum(p["rouge1"] >= SUCCESS_ROUGE1 for p in per)
    low, high = wilson(exact, n)
    s_low, s_high = wilson(success, n)

    def mean(values: list[float]) -> float | None:
        return float(np.mean(values)) if values else None

    return {
        "sequences": n,
        "exact": exact,
        "exact_rate": exact / n if n else None,
        "exact_low": low,
        "exact_high": high,
        "rouge1_success": success,
        "rouge1_success_low": s_low,
        "rouge1_success_high": s_high,
        **{k: mean([p[k] for p in per]) for k in KINDS},
        "token_precision": mean([s.token_precision for s in scores]),
        "token_recall": mean([s.token_recall for s in scores]),
    }
