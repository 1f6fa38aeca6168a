"""The intervals verdicts rest on: Welch for repeated measurements, Wilson and Newcombe for rates, and how much
more data would decide a difference."""

from __future__ import annotations

import pytest
from scipy import stats

from hebench.analysis.stats import more_to_decide, welch_interval
from hebench.analysis.success import images_to_decide, newcombe, wilson
from hebench.results.units import fmt_score


def test_welch_interval_matches_scipys_welch_test():
    a, b = [10.2, 9.8, 10.5, 10.1], [11.0, 11.6, 10.9, 11.9, 11.3]
    ma, mb = sum(a) / len(a), sum(b) / len(b)
    lo, hi = welch_interval(ma, stats.tstd(a), len(a), mb, stats.tstd(b), len(b))
    expected = stats.ttest_ind(a, b, equal_var=False).confidence_interval(0.95)
    assert (lo, hi) == pytest.approx((expected.low, expected.high))


def test_one_value_per_side_has_no_interval_and_values_that_never_vary_give_the_difference_itself():
    assert welch_interval(1.0, 0.0, 1, 2.0, 0.0, 1) is None  # one steady round: nothing to judge by
    assert welch_interval(1.0, 0.0, 3, 2.0, 0.0, 3) == (-1.0, -1.0)  # bytes: exact


def test_more_rounds_to_decide_is_the_first_count_that_does():
    args = (1.0, 0.5, 2, 1.5, 0.5, 2)
    more = more_to_decide(*args)
    assert more is not None and more > 0
    before = welch_interval(1.0, 0.5, 2 + more - 1, 1.5, 0.5, 2 + more - 1)
    after = welch_interval(1.0, 0.5, 2 + more, 1.5, 0.5, 2 + more)
    assert before[0] < 0 < before[1] and after[1] < 0
    assert more_to_decide(1.0, 0.5, 4, 1.0, 0.5, 4) is None  # equal means: no number of rounds decides
    assert more_to_decide(1.0, 0.0, 1, 2.0, 0.0, 1) == 1  # one round each: at least a second is needed


def test_newcombe_reproduces_the_published_example():
    # Newcombe (1998), Stat. Med. 17:873, example (a): 56/70 vs 48/80, method 10 gives 0.0524 to 0.3339
    assert newcombe(56, 70, 48, 80) == pytest.approx((0.0524, 0.3339), abs=1e-4)


def test_two_images_each_never_decide_and_the_images_needed_are_honest():
    lo, hi = newcombe(1, 2, 0, 2)
    assert lo < 0 < hi  # raw 1 of 2 recovered against 0 of 2: no verdict
    more = images_to_decide(1, 2, 0, 2)
    assert more == 4
    n = 2 + more
    assert newcombe(n // 2, n, 0, n)[0] > 0 and newcombe((n - 1) // 2, n - 1, 0, n - 1)[0] <= 0
    assert images_to_decide(3, 10, 3, 10) is None  # equal rates
    assert wilson(0, 2)[1] == pytest.approx(0.658, abs=1e-3)


def test_scores_show_no_minus_zero_and_no_spread_for_one_image():
    assert fmt_score({"mean": -0.0023, "std": 0.0}, 2) == "0.00 ± 0.00"
    assert fmt_score({"mean": 0.84, "std": 0.0}, 1) == "0.84"
    assert fmt_score(None, 3) == "-"
