"""ROUGE and token scores of recovered text on known strings and sequences."""

from __future__ import annotations

import pytest

from hebench.inversion.scoring.text import pool, score_sequences, text_rouge


def test_rouge_on_known_strings():
    # "the cat sat" against "the cat sat on the mat": 3 of 6 unigrams, 2 of 5 bigrams, LCS 3
    scores = text_rouge("the cat sat on the mat", "the cat sat")
    assert scores["rouge1"] == pytest.approx(2 * 1.0 * 0.5 / 1.5)
    assert scores["rouge2"] == pytest.approx(2 * 1.0 * 0.4 / 1.4)
    assert scores["rougeL"] == pytest.approx(2 * 1.0 * 0.5 / 1.5)
    assert text_rouge("to be or not to be", "to be or not to be") == {"rouge1": 1.0, "rouge2": 1.0, "rougeL": 1.0}
    assert text_rouge("to be", "or not") == {"rouge1": 0.0, "rouge2": 0.0, "rougeL": 0.0}
    # words as written: no lowercasing, no punctuation stripped (token ids and decoded text alike)
    assert text_rouge("Thou art", "thou art")["rouge1"] == pytest.approx(0.5)


def test_sequences_are_paired_one_to_one_and_exact_ones_counted():
    references = [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]]
    recovered = [[5, 6, 7, 8], [1, 2, 3, 99]]  # one exact (out of order), one with a wrong last token
    scores = score_sequences(references, recovered)
    assert scores.exact == 1 and scores.sequences == 3 and scores.recovered == 2
    per = scores.per_sequence
    assert per[1]["exact"] == 1.0 and per[1]["rouge1"] == 1.0
    assert per[0]["rouge1"] == pytest.approx(0.75) and per[0]["rouge2"] == pytest.approx(2 / 3)
    assert per[2] == {"rouge1": 0.0, "rouge2": 0.0, "rougeL": 0.0, "exact": 0.0}  # unpaired
    assert scores.token_precision == pytest.approx(7 / 8) and scores.token_recall == pytest.approx(7 / 12)
    assert 0 < scores.exact_low < 1 / 3 < scores.exact_high < 1  # Wilson over 3 sequences
    assert scores.rouge1 == pytest.approx((0.75 + 1.0 + 0.0) / 3)


def test_a_sequence_is_paired_once_and_pooling_counts_every_sequence():
    references = [[1, 2, 3], [1, 2, 3]]  # the same text twice in a batch
    scores = score_sequences(references, [[1, 2, 3]])
    assert scores.exact == 1  # recovered once, counts once
    nothing = score_sequences([[4, 5, 6]], [])
    assert nothing.exact == 0 and nothing.token_recall == 0.0 and nothing.rouge1 == 0.0
    pooled = pool([scores, nothing])
    assert pooled["sequences"] == 3 and pooled["exact"] == 1 and pooled["exact_rate"] == pytest.approx(1 / 3)


def test_token_bag_scores_a_reconstruction_without_sequences():
    scores = score_sequences([[1, 2, 3]], [], claimed_tokens=[1, 2, 7])
    assert scores.token_precision == pytest.approx(2 / 3) and scores.token_recall == pytest.approx(2 / 3)
    assert scores.exact == 0
