"""FedAvg weights applied before encryption: unequal sample counts within the stated error, at the bytes of equal."""

from __future__ import annotations

import numpy as np
import pytest

from hebench.crypto import create_adapter, load_adapter
from hebench.crypto.exact_weights import PreWeight, pre_weights
from hebench.errors import CiphertextError, PrecisionError
from tests.conftest import INSTALLED

pytestmark = pytest.mark.skipif("seal-bfv" not in INSTALLED, reason="TenSEAL not installed")

FEMNIST_LIKE = {0: 1597, 1: 1203, 2: 17}  # unequal writers: exact weights would need 2,817 summands of headroom


def _fedavg(name: str, samples: dict[int, int], xs: dict[int, np.ndarray], pre: bool, **params):
    holder = create_adapter(name, {"bits": 16, "clip": 1.0, **params})
    holder.keygen()
    public = load_adapter(holder.export_keys(secret=False))
    total_n = sum(samples.values())
    weights = pre_weights(samples, holder.levels) if pre else {}
    total = None
    for i in samples:
        enc = holder.encrypt(xs[i], weights.get(i))
        term = public.multiply_plain(public.deserialize(holder.serialize(enc)), 1.0 if pre else samples[i] / total_n)
        total = term if total is None else public.add(total, term)
    return holder, holder.decrypt(public.deserialize(public.serialize(total)))


def test_bounds_total_exactly_the_headroom_of_equal_summands():
    for samples in (FEMNIST_LIKE, {0: 1, 1: 1}, {0: 5, 1: 7, 2: 11, 3: 13}, {0: 1, 1: 10**6}):
        got = pre_weights(samples, 32767)
        assert sum(p.bound for p in got.values()) == len(samples) * 32767
        assert all(abs(p.bound - p.weight * 32767) < 1 and p.summands == len(samples) for p in got.values())
    assert pre_weights({0: 3, 1: 3}, 127) == {0: PreWeight(1.0, 127, 2), 1: PreWeight(1.0, 127, 2)}


@pytest.mark.parametrize("name", ["seal-bfv", "seal-ckks"])
def test_unequal_counts_average_within_the_stated_precision_with_headroom_for_the_clients_only(name):
    rng = np.random.default_rng(3)
    xs = {i: rng.uniform(-1, 1, 20_000) for i in FEMNIST_LIKE}
    for x in xs.values():
        x[:2] = [1.0, -1.0]  # the edges of the range
    holder, got = _fedavg(name, FEMNIST_LIKE, xs, pre=True, max_summands=len(FEMNIST_LIKE))
    total = sum(FEMNIST_LIKE.values())
    want = sum(n / total * xs[i] for i, n in FEMNIST_LIKE.items())
    assert np.abs(got - want).max() <= holder.info().precision


def test_exact_weights_need_the_samples_total_as_headroom_where_pre_weights_need_the_clients():
    rng = np.random.default_rng(4)
    xs = {i: rng.uniform(-1, 1, 100) for i in FEMNIST_LIKE}
    with pytest.raises(PrecisionError, match="denominator"):  # the old way, at the clients' headroom
        _fedavg("seal-bfv", FEMNIST_LIKE, xs, pre=False, max_summands=len(FEMNIST_LIKE))
    small = create_adapter("seal-bfv", {"bits": 16, "clip": 1.0, "max_summands": 2})
    large = create_adapter("seal-bfv", {"bits": 16, "clip": 1.0, "max_summands": 4096})
    assert small.info().params["layout"]["field_bits"] + 11 == large.info().params["layout"]["field_bits"]  # 17 vs 28


def test_a_pre_weight_beyond_the_headroom_or_on_an_adapter_without_it_is_refused():
    holder = create_adapter("seal-bfv", {"bits": 8, "max_summands": 2})
    holder.keygen()
    with pytest.raises(PrecisionError, match="headroom"):
        holder.encrypt(np.zeros(4), PreWeight(3.0, 3 * holder.levels, 3))  # 3 clients on 2 summands' headroom
    plain = create_adapter("plain")
    with pytest.raises(CiphertextError, match="cannot apply a weight"):
        plain.encrypt(np.zeros(4), PreWeight(1.0, 1, 1))
