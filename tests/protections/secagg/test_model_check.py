"""secagg's model check: clients seal a digest of the global model they hold into their shares; a run whose
clients all hold the same model is untouched by it, and clients given different models refuse the round."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hebench.analysis.summary import summarize_run
from hebench.config import parse_suite
from hebench.protections.secagg.attacker_round import secagg_round
from hebench.protections.secagg.client import DIGEST_BYTES
from hebench.protections.secagg.params import SecAggParams
from hebench.results import read_records
from hebench.runtime.runner import Runner

CHECKED = SecAggParams(model_check=True)


def _vectors(n: int) -> tuple[dict[int, np.ndarray], dict[int, int]]:
    rng = np.random.default_rng(4)
    return {i: rng.normal(0, 0.2, 200) for i in range(n)}, dict.fromkeys(range(n), 5)


def test_the_same_model_everywhere_passes_the_check():
    vectors, samples = _vectors(3)
    outcome = secagg_round(vectors, samples, CHECKED, dict.fromkeys(vectors, b"m" * DIGEST_BYTES))
    assert outcome.result is not None and not outcome.refusals
    assert np.abs(outcome.result.average - np.mean(list(vectors.values()), axis=0)).max() < 1e-4


def test_a_client_given_another_model_makes_its_neighbours_refuse_the_round():
    vectors, samples = _vectors(3)
    digests = {0: b"v" * DIGEST_BYTES, 1: b"d" * DIGEST_BYTES, 2: b"d" * DIGEST_BYTES}
    outcome = secagg_round(vectors, samples, CHECKED, digests)
    assert outcome.result is None
    assert {0, 1, 2} <= set(outcome.refusals) and "model inconsistency" in outcome.refusals[0]
    # control: without the check the same round completes (and would sum the victim's update with dead ones)
    assert secagg_round(vectors, samples, SecAggParams(), digests).result is not None


@pytest.mark.slow
def test_a_run_with_the_model_check_trains_as_without_it(tmp_path):
    suite = {
        "name": "check",
        "data": {"dataset": "digits", "clients": 3},
        "model": {"name": "mlp", "hidden": 4},
        "training": {"rounds": 3, "lr": 0.1},
        "configurations": [{"mode": "secagg"}, {"mode": "secagg", "params": {"model_check": True}}],
    }
    Runner(parse_suite(json.loads(json.dumps(suite))), tmp_path).run()
    rows = {r.config: r for r in summarize_run(read_records(tmp_path / "results.jsonl").records)}
    plain, checked = rows["secagg"], rows["secagg[model_check=True]"]
    assert checked.rounds_done == plain.rounds_done == 3
    assert checked.accuracy == pytest.approx(plain.accuracy, abs=0.02)
