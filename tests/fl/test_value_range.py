"""A compact update outside its clip: per-tensor scales from the global model, counted saturation, a share."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
import torch

from hebench.config import Configuration
from hebench.errors import PartyError, PrecisionError
from hebench.fl.update import model_vector
from hebench.fl.value_range import ValueRange
from tests.conftest import INSTALLED


def _model() -> torch.nn.Module:
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3))
    with torch.no_grad():
        model[0].weight.fill_(0.3)  # within clip / 2 = 0.5: scale 1
        model[0].bias.fill_(-0.9)  # needs 1.8: scale 2
        model[1].weight.fill_(1.0)  # needs 2: scale 2 (a BatchNorm weight starts at 1.0)
        model[1].bias.fill_(3.1)  # needs 6.2: scale 8
    return model


def test_scales_are_the_smallest_powers_of_two_that_leave_each_tensor_room_to_double():
    fit = ValueRange(clip=1.0, max_clipped=0.0).fit(_model())
    assert fit.scales == [1.0, 2.0, 2.0, 8.0] and fit.largest == 8.0


def test_scaling_is_exact_and_undone_after_decryption():
    model = _model()
    fit = ValueRange(clip=1.0, max_clipped=0.0).fit(model)
    vector = model_vector(model) * np.float32(1.7)  # trained: every tensor grew by 70 %
    scaled = fit.scaled(vector)
    assert scaled is not vector and np.abs(scaled).max() <= 1.0  # within the clip: nothing saturates
    fit.restore(scaled)
    np.testing.assert_array_equal(scaled, vector)  # powers of two: bit for bit


def test_values_still_beyond_the_clip_saturate_counted_and_above_the_share_fail():
    fit = ValueRange(clip=1.0, max_clipped=0.25).fit(_model())
    values = np.array([0.5, -1.5, 0.2, 0.1, 2.0, -0.3, 0.0, 0.9], dtype=np.float32)  # 2 of 8 beyond
    clipped, count = fit.saturate(values)
    assert count == 2
    np.testing.assert_array_equal(clipped, np.float32([0.5, -1.0, 0.2, 0.1, 1.0, -0.3, 0.0, 0.9]))
    assert values[1] == -1.5  # the caller's array is untouched (it may be the oracle's copy)
    inside = np.zeros(3, dtype=np.float32)
    same, none = fit.saturate(inside)
    assert none == 0 and same is inside
    strict = ValueRange(clip=1.0, max_clipped=0.2).fit(_model())
    with pytest.raises(PrecisionError, match=r"2 of 8 values .* above the 0\.2 share"):
        strict.saturate(values)


@pytest.mark.skipif("seal-bfv" not in INSTALLED, reason="TenSEAL not installed")
def test_compact_adapters_have_a_range_and_ckks_or_fixed_point_ones_keep_theirs():
    assert ValueRange.of(Configuration(mode="host-he", adapter="seal-bfv")) == ValueRange(1.0, 1e-4)
    assert ValueRange.of(Configuration(mode="host-he", adapter="seal-ckks", params={"clip": 2.0, "max_clipped": 0}))
    assert ValueRange.of(Configuration(mode="host-he", adapter="tenseal-ckks")) is None
    assert ValueRange.of(Configuration(mode="raw")) is None


def _peak_allocated(call) -> int:
    """Bytes numpy allocated at the peak of ``call()`` beyond what was held before (tracemalloc sees numpy)."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        call()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def test_checking_and_saturating_a_big_update_makes_no_model_sized_temporary():
    """A 4M-value (16 MB) update is checked against the clip in blocks: the old whole-vector ``np.abs(values) > clip``
    made a 16 MB float copy and a 4 MB mask, the compact client's peak above the raw client's."""
    fit = ValueRange(clip=1.0, max_clipped=1e-3).fit(_model())
    values = np.random.default_rng(0).uniform(-0.9, 0.9, 4_000_000).astype(np.float32)
    assert _peak_allocated(lambda: fit.saturate(values)) < values.nbytes // 2  # one block: 5 MB
    values[::1000] = 3.0  # 4,000 saturate, within the share: clipped in place when the array is the client's own
    result: list = []
    assert _peak_allocated(lambda: result.append(fit.saturate(values, in_place=True))) < values.nbytes // 2
    clipped, count = result[0]
    assert count == 4000 and clipped is values and values.max() == 1.0


def test_survivors_renormalise_in_place_as_the_float64_division_did():
    from hebench.fl.client import renormalised

    vector = np.random.default_rng(1).normal(0, 1, 3_000_001).astype(np.float32)
    expected = (vector.astype(np.float64) / 0.7).astype(np.float32)
    peak = _peak_allocated(lambda: renormalised(vector, 0.7))
    np.testing.assert_array_equal(vector, expected)  # bit for bit, divided in place
    assert peak < vector.nbytes // 2  # no float64 copy of the whole vector (2 x 24 MB before)
    frozen = np.frombuffer(np.float32([1.4, 2.8]).tobytes(), dtype=np.float32)  # a read-only aggregate is copied
    np.testing.assert_array_equal(renormalised(frozen, 1.4), np.float32([1.0, 2.0]))


def test_a_fit_from_the_global_model_as_a_vector_equals_the_fit_from_the_model():
    """A Flower node holds the global model as a vector: its scales must be the local client's, or the sums of
    updates scaled by different clients (and the aggregate restored with other scales) would be wrong."""
    model, vrange = _model(), ValueRange(clip=1.0, max_clipped=0.0)
    sizes = [p.numel() for p in model.parameters()]
    assert vrange.fit_vector(model_vector(model), sizes) == vrange.fit(model)
    trained = torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.BatchNorm1d(8), torch.nn.Linear(8, 3))
    with torch.no_grad():
        for i, p in enumerate(trained.parameters()):
            p.mul_(3.0**i)  # from within the clip to 81 times it
    sizes = [p.numel() for p in trained.parameters()]
    assert vrange.fit_vector(model_vector(trained), sizes) == vrange.fit(trained)
    with pytest.raises(PartyError, match="sizes add to"):
        vrange.fit_vector(model_vector(trained), sizes[:-1])
