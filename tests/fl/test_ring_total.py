"""The ring running sum (secagg's aggregator, secret sharing's share holders) is held in the ring's wire width and
sums chunk by chunk to exactly the whole-vector sum, wrap-around included."""

from __future__ import annotations

import numpy as np
import pytest

from hebench.fl.ring_stream import RingTotal, spans
from hebench.protections.secagg import client as secagg_client
from hebench.protections.secagg.common import wire_dtype
from hebench.protections.secagg.params import SecAggParams
from tests.fl.test_ring_streaming import _nearest, _secagg_total

MODULI = [2**32, 2**31 - 1, 1000003, 2**40, 2**62, None]  # None: secret sharing's 2^64


def _vectors(modulus: int | None, count: int, length: int) -> list[np.ndarray]:
    """Ring vectors in the wire width, most values near the top of the ring so that every sum wraps."""
    top = 2**64 if modulus is None else modulus
    width = np.uint64 if modulus is None else wire_dtype(modulus)
    rng = np.random.default_rng(7)
    out = []
    for _ in range(count):
        high = rng.integers(0, 2**20, length, dtype=np.uint64)
        out.append((np.uint64(top - 1) - high).astype(width))
    out[0][:5] = 0
    return out


def _exact_sum(vectors: list[np.ndarray], modulus: int | None) -> list[int]:
    top = 2**64 if modulus is None else modulus
    return [sum(int(v[k]) for v in vectors) % top for k in range(len(vectors[0]))]


@pytest.mark.parametrize("modulus", MODULI)
def test_a_chunked_ring_sum_equals_the_whole_vector_sum_bit_for_bit(modulus):
    vectors = _vectors(modulus, 5, 1000)
    chunked, whole = RingTotal(modulus), RingTotal(modulus)
    for vector in vectors:
        whole.add(0, len(vector), vector)
    for start, stop in reversed(list(spans(1000, 37))):  # chunks in any order: addition in the ring commutes
        for vector in vectors:
            chunked.add(start, 1000, vector[start:stop])
    expected = _exact_sum(vectors, modulus)
    assert sum(int(v[9]) for v in vectors) >= (2**64 if modulus is None else modulus)  # the sum did wrap
    assert chunked.values is not None and whole.values is not None
    assert [int(x) for x in chunked.values] == expected
    np.testing.assert_array_equal(chunked.values, whole.values)


def test_wide_chunks_are_reduced_into_a_narrow_ring():
    """A uint64 chunk (a mask, a caller that did not narrow) adds modulo the ring, not modulo its own width."""
    total = RingTotal(1000003)
    total.add(0, 3, np.array([1000002, 2**40 + 5, 2**64 - 1], dtype=np.uint64))
    total.add(0, 3, np.array([5, 1000002, 1], dtype=np.uint32))
    assert total.values is not None
    assert [int(x) for x in total.values] == [4, (2**40 + 5 + 1000002) % 1000003, (2**64 - 1 + 1) % 1000003]


@pytest.mark.parametrize(("modulus", "dtype"), [(2**32, np.uint32), (1000003, np.uint32), (2**40, np.uint64)])
def test_the_running_sum_is_held_in_the_rings_wire_width(modulus, dtype):
    """A modulus up to 2^32 (Flower's and secagg's default) holds 4 bytes a value: one masked update, not two."""
    total = RingTotal(modulus)
    total.add(0, 10, np.ones(10, dtype=wire_dtype(modulus)))
    assert total.values is not None
    assert total.values.dtype == dtype == wire_dtype(modulus)
    assert total.values.nbytes == 10 * np.dtype(wire_dtype(modulus)).itemsize


def test_secret_sharing_keeps_its_2_64_ring():
    total = RingTotal()
    total.add(0, 2, np.array([2**64 - 1, 3], dtype=np.uint64))
    total.add(0, 2, np.array([2, 2**64 - 1], dtype=np.uint64))
    assert total.values is not None and total.values.dtype == np.uint64
    assert [int(x) for x in total.values] == [1, 2]


@pytest.mark.parametrize("modulus", [2**32, 2**31 - 1])
def test_a_secagg_round_unmasks_its_narrow_running_sum_exactly(monkeypatch, modulus):
    """The aggregator's uint32 sum, with a dropped client's masks rebuilt and removed chunk by chunk, is the
    survivors' quantised sum mod M value for value."""
    monkeypatch.setattr(secagg_client, "quantize_weighted", _nearest)
    params = SecAggParams(num_shares=3, reconstruction_threshold=2, modulus=modulus)
    rng = np.random.default_rng(5)
    vectors = {i: rng.normal(0, 1, 500).astype(np.float32) for i in range(3)}
    samples = {i: 10 + i for i in range(3)}
    weights = {i: s / sum(samples.values()) for i, s in samples.items()}
    result = _secagg_total(params, vectors, samples, 37, {2})
    expected = sum(_nearest(vectors[i], weights[i], params) for i in (0, 1)) % np.uint64(modulus)
    assert result.total.values.dtype == np.uint32
    np.testing.assert_array_equal(result.total.values, expected)
