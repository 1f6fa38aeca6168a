"""``tokens``: seeded synthetic token sequences for text encoders (cost only: no text task ships here).

No labelled text corpus ships with an installed package on this machine (scikit-learn's 20 newsgroups
is a download; its bundled files are numeric tables and a few dataset descriptions), so the encoder
trains on generated data: each class draws its tokens from its own Zipf-like distribution over a
shared 2,000-word slice of BERT's 30,522-token vocabulary, so a classifier has something to learn.
Accuracy on these sequences says nothing about language; runs on them measure cost. Sequences are
stored as ``(n, 1, 1, length)`` int64 tensors (hebench's image-shaped batches).
"""

from __future__ import annotations

import numpy as np
import torch

LENGTH, CLASSES, SAMPLES, WORDS, VOCAB = 32, 4, 640, 2000, 30522


def load_token_tensors(
    samples: int = SAMPLES, length: int = LENGTH, classes: int = CLASSES, seed: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """(token ids (n, 1, 1, length), labels (n,)); token 101 ([CLS]) first, as BERT's inputs."""
    rng = np.random.default_rng(seed)
    words = rng.choice(np.arange(1000, VOCAB), WORDS, replace=False)
    ranks = 1.0 / np.arange(1, WORDS + 1)
    labels = rng.integers(0, classes, samples)
    ids = np.empty((samples, length), dtype=np.int64)
    ids[:, 0] = 101
    orders = [rng.permutation(WORDS) for _ in range(classes)]  # each class ranks the words its own way
    for c in range(classes):
        rows = np.flatnonzero(labels == c)
        p = ranks[orders[c]] / ranks.sum()
        ids[rows, 1:] = words[rng.choice(WORDS, (len(rows), length - 1), p=p)]
    return torch.from_numpy(ids).reshape(samples, 1, 1, length), torch.from_numpy(labels)
