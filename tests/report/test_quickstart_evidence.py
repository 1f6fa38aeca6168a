"""The quickstart collects the evidence its verdicts need: steady rounds with a spread, and enough images for
"defended" to be decidable at the rate iDLG recovers raw images (about half)."""

from __future__ import annotations

from pathlib import Path

from hebench.analysis.success import images_to_decide
from hebench.config import load_suite
from hebench.config.steady import warmup_rounds

QUICKSTART = Path(__file__).resolve().parents[2] / "suites" / "quickstart.yaml"


def test_the_quickstart_has_steady_rounds_to_judge_costs_by():
    suite = load_suite(QUICKSTART)
    steady = suite.training.rounds - warmup_rounds(suite.measure.warmup_rounds, suite.training.rounds)
    assert steady >= 5  # Welch needs a spread; a handful of rounds decides the differences the report names


def test_the_quickstart_attacks_enough_images_to_decide_a_defence():
    suite = load_suite(QUICKSTART)
    n = suite.privacy.images * suite.privacy.seeds
    assert images_to_decide(n // 2, n, 0, n) == 0  # raw recovering half against none: decided at this n
    assert images_to_decide(1, 2, 0, 2) > 0  # where the old quickstart's 2 images decided nothing
