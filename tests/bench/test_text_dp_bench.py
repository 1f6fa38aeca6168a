"""The text DP study's pure parts: ε from hebench's client-level accountant (falls as the noise grows, none at z = 0),
the thresholds read from rows (monotone and not), the noise list parser, the measured noise source. No attack runs
here and no timing is checked."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from hebench.bench.text_dp import (
    MeasuredNoise,
    epsilon,
    noises,
    recovers_tokens,
    suite_dp,
    threshold,
    thresholds,
)
from hebench.config import DPSpec
from hebench.errors import ParameterError


def _spec(z: float) -> DPSpec:
    return DPSpec(level="client", clip=1.0, noise_multiplier=z, delta=1e-5)


def test_epsilon_falls_as_the_noise_grows_and_composes_over_rounds():
    zs = [1e-3, 1e-2, 0.1, 0.5, 1.0, 2.0, 5.0]
    one = [epsilon(_spec(z), 1) for z in zs]
    assert all(e is not None and e > 0 for e in one)
    assert all(a > b for a, b in itertools.pairwise(one)), one
    assert epsilon(_spec(1.0), 100) > epsilon(_spec(1.0), 1)
    assert epsilon(_spec(0.0), 1) is None  # no noise: no finite guarantee


def test_the_suites_dp_configuration_gives_delta_and_accountant():
    raw = {
        "name": "x",
        "data": {"dataset": "shakespeare", "clients": 2, "block_tokens": 16},
        "model": {"name": "gpt2_tiny"},
        "training": {"rounds": 1, "local_steps": 1, "batch_size": 2, "optimizer": "sgd", "lr": 0.01},
        "configurations": [{"mode": "raw"}, {"mode": "raw", "dp": {"level": "client", "noise_multiplier": 0.1}}],
    }
    assert suite_dp(raw).delta == 1e-5
    raw["configurations"] = [{"mode": "raw"}]
    with pytest.raises(ParameterError, match="no client-level DP"):
        suite_dp(raw)


def _row(z: float | None, exact: int, recall: float = 0.0, fine_tuning: str = "lora", batch: int = 1) -> dict:
    eps = None if not z else 1.0 / z  # any decreasing stand-in for the accountant
    return {
        "fine_tuning": fine_tuning,
        "batch_size": batch,
        "dp": z is not None,
        "noise_multiplier": z,
        "epsilon_per_round": eps,
        "exact": exact,
        "token_recall": recall,
        "token_precision": recall,
    }


def test_the_threshold_sits_between_the_last_recovery_and_the_first_failure():
    rows = [_row(0.0, 1), _row(1e-3, 2), _row(1e-2, 1), _row(1e-1, 0), _row(1.0, 0)]
    found = threshold(rows)
    assert found["z_recovering_up_to"] == 1e-2 and found["smallest_epsilon_recovering"] == pytest.approx(100)
    assert found["z_failing_from"] == 1e-1 and found["largest_epsilon_failing"] == pytest.approx(10)
    assert found["stops_from_z"] == 1e-1 and found["stops_below_epsilon"] == pytest.approx(10)
    assert found["monotone"] is True


def test_a_failure_below_a_recovery_is_flagged_not_monotone():
    rows = [_row(0.0, 1), _row(1e-4, 0), _row(1e-3, 1), _row(1e-2, 0), _row(1.0, 0)]
    found = threshold(rows)
    assert found["monotone"] is False
    assert found["largest_epsilon_failing"] == pytest.approx(1e4)  # the stray failure at tiny noise
    assert found["stops_from_z"] == 1e-2  # every stronger noise failed from here


def test_every_failure_and_every_success_and_z0():
    failing = threshold([_row(0.0, 0), _row(1.0, 0)])
    assert failing["smallest_epsilon_recovering"] is None
    assert failing["largest_epsilon_failing"] == "infinite"  # z = 0: clipping alone stopped it
    assert failing["stops_from_z"] == 0.0
    passing = threshold([_row(0.0, 1), _row(1.0, 1)])
    assert passing["stops_from_z"] is None and passing["largest_epsilon_failing"] is None
    assert passing["monotone"] is True


def test_thresholds_per_cell_with_the_baseline_and_tokens_apart():
    rows = [
        _row(None, 1, 1.0),
        _row(0.0, 1, 1.0),
        _row(1e-3, 0, 0.95),
        _row(1.0, 0, 0.0),
        _row(None, 0, 0.5, "full", 2),
        _row(1.0, 0, 0.0, "full", 2),
    ]
    cells = thresholds(rows)
    assert [(c["fine_tuning"], c["batch_size"]) for c in cells] == [("lora", 1), ("full", 2)]
    lora, full = cells
    assert lora["baseline_recovers_text"] and not full["baseline_recovers_text"]
    assert lora["text"]["stops_from_z"] == 1e-3
    assert lora["tokens"]["stops_from_z"] == 1.0  # the tokens survive z = 1e-3 without their order
    assert recovers_tokens(rows[2]) and not recovers_tokens(rows[3])
    by_position = {**rows[2], "token_precision": 0.7}  # extra candidates per position: still the tokens
    assert recovers_tokens(by_position) and not recovers_tokens({**rows[2], "token_precision": 0.3})


def test_the_noise_list_parser():
    assert noises("1,0,1e-6,1") == (0.0, 1e-6, 1.0)
    for bad in ("", "-1", "x", "inf", "nan"):
        with pytest.raises(ParameterError, match="noise multipliers"):
            noises(bad)


def test_the_measured_noise_passes_the_draw_through_and_keeps_its_norm():
    class Fixed:
        def gaussian(self, std: float, shape: tuple[int, ...]) -> np.ndarray:
            return np.full(shape, std)

    source = MeasuredNoise(Fixed())
    drawn = source.gaussian(0.5, (4,))
    assert np.array_equal(drawn, np.full(4, 0.5))
    assert source.norm == pytest.approx(1.0)
