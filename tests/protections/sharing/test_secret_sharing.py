"""Additive sharing on the 64-bit ring: exact integer sums, uniform single shares, collusion recovers."""

from __future__ import annotations

import numpy as np
import pytest

from hebench.errors import PrecisionError
from hebench.protections.sharing.params import SecretSharingParams
from hebench.protections.sharing.ring_shares import combine, decode, encode, quantizer, split

PARAMS = SecretSharingParams(aggregators=3, bits=24, clip=4.0)


def updates(n: int = 4, size: int = 2000):
    rng = np.random.default_rng(11)
    return [rng.normal(0, 0.5, size).astype(np.float32) for _ in range(n)], [12, 7, 30, 5][:n]


@pytest.mark.parametrize("k", [2, 3, 4])
def test_sum_of_per_aggregator_sums_equals_the_plain_integer_fedavg_numerator_exactly(k):
    vectors, samples = updates()
    params = SecretSharingParams(aggregators=k, bits=24, clip=4.0)
    pairs = enumerate(zip(vectors, samples, strict=True))
    encoded = [encode(v, n, params, np.random.default_rng(i)) for i, (v, n) in pairs]
    shares = [split(e, k) for e in encoded]
    per_aggregator = [combine([s[a] for s in shares]) for a in range(k)]  # what each aggregator sends back
    rebuilt = combine(per_aggregator)
    plain = sum(e.view(np.int64) for e in encoded)  # integer domain: exact
    assert np.array_equal(rebuilt.view(np.int64), plain)
    floats = decode(rebuilt, sum(samples), params)
    want = sum(n * v.astype(np.float64) for v, n in zip(vectors, samples, strict=True)) / sum(samples)
    assert np.abs(floats - want).max() < quantizer(params).max_error  # stochastic rounding: under one step


def test_one_aggregators_share_is_uniform_and_never_the_update():
    vectors, samples = updates(1, 100_000)
    encoded = encode(vectors[0], samples[0], PARAMS, np.random.default_rng(0))
    shares = split(encoded, PARAMS.aggregators)
    for share in shares:
        assert not np.array_equal(share, encoded)
        top = (share >> np.uint64(56)).astype(np.int64)  # top byte: 256 equally likely values if uniform
        counts = np.bincount(top, minlength=256)
        expected = len(share) / 256
        chi2 = float(((counts - expected) ** 2 / expected).sum())
        assert chi2 < 400  # 255 dof: mean 255, sd ~23; the encoded update itself scores in the millions
    top = (encoded >> np.uint64(56)).astype(np.int64)
    counts = np.bincount(top, minlength=256)
    assert float(((counts - len(encoded) / 256) ** 2 / (len(encoded) / 256)).sum()) > 400  # the control


def test_all_aggregators_colluding_recover_the_update():
    vectors, samples = updates(1)
    encoded = encode(vectors[0], samples[0], PARAMS, np.random.default_rng(0))
    recovered = decode(combine(split(encoded, PARAMS.aggregators)), samples[0], PARAMS)
    assert np.abs(recovered - vectors[0]).max() < quantizer(PARAMS).max_error


def test_a_value_beyond_clip_is_refused_not_clipped():
    """As seal-bfv refuses values beyond its clip: 100 with clip 8 used to become 8.0 without a word."""
    params = SecretSharingParams(aggregators=2, bits=24, clip=8.0)
    with pytest.raises(PrecisionError, match=r"\|x\| = 100, beyond the range clip = 8") as info:
        encode(np.array([0.5, 100.0, -1.0], np.float32), 3, params, np.random.default_rng(0))
    assert "raise params.clip" in info.value.fix
    with pytest.raises(PrecisionError):
        encode(np.array([np.nan], np.float32), 3, params, np.random.default_rng(0))
    edge = encode(np.array([8.0, -8.0], np.float32), 1, params, np.random.default_rng(0))  # the bound itself is fine
    np.testing.assert_allclose(decode(edge, 1, params), [8.0, -8.0])
