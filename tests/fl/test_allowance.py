"""What a party that decrypts for others may open (issue #36): one aggregate of the model's length per round of
the run, rounds in order, and no more than the run's rounds in all."""

from __future__ import annotations

import math

import pytest

from hebench.config import parse_suite
from hebench.errors import PartyError
from hebench.fl.allowance import Allowance, Decryptions, allowance_for
from hebench.models import count_parameters


def test_one_aggregate_of_the_models_length_per_round_in_order():
    opened = Decryptions(Allowance(first=0, end=3, values=100), "engine 1")
    opened.admit(0, 60)
    opened.admit(0, 40)  # an aggregate streams in chunks
    with pytest.raises(PartyError, match="engine 1 refused to decrypt 101 values in round 0: more than one"):
        opened.admit(0, 1)
    opened.admit(2, 100)  # a later round (the aggregator names it)
    with pytest.raises(PartyError, match="round 1 again, after round 2"):
        opened.admit(1, 10)
    with pytest.raises(PartyError, match="round 3, which this run does not have"):
        opened.admit(3, 10)
    opened.admit(None, 100)  # a request naming no round spends the run's last aggregate ...
    with pytest.raises(PartyError, match="301 values in all, above the run's 300"):
        opened.admit(None, 1)  # ... and nothing is left


def test_the_mask_agreement_is_a_round_of_its_own_before_the_first():
    opened = Decryptions(Allowance(first=0, end=1, values=10, map_values=100))
    opened.admit(-1, 100)
    opened.admit(0, 10)
    with pytest.raises(PartyError):
        opened.admit(-1, 1)


def test_a_malformed_allowance_is_refused():
    with pytest.raises(PartyError, match="malformed decryption allowance"):
        Allowance.from_json({"first": 0})
    assert Allowance.from_json(Allowance(1, 4, 7, 9).to_json()) == Allowance(1, 4, 7, 9)


@pytest.mark.parametrize(
    ("selective", "expected"),
    [(None, "all"), ({"mask": "random", "ratio": 0.1}, "ratio"), ({"mask": "layers", "layers": ["last"]}, "last")],
)
def test_a_configurations_allowance_is_its_models_length_or_its_encrypted_part(selective, expected):
    config = {"mode": "offload", "adapter": "tenseal-ckks", **({"selective": selective} if selective else {})}
    suite = parse_suite(
        {
            "name": "a",
            "data": {"dataset": "digits", "clients": 2},
            "model": {"name": "mlp", "hidden": 4},
            "training": {"rounds": 5},
            "configurations": [config],
        }
    )
    allowance = allowance_for(suite, suite.configurations[0], (1, 8, 8), 10, start_round=2)
    length = count_parameters("mlp", (1, 8, 8), 10, 4)
    assert (allowance.first, allowance.end) == (2, 5)
    if expected == "all":
        assert (allowance.values, allowance.map_values) == (length, 0)
    elif expected == "ratio":
        assert (allowance.values, allowance.map_values) == (math.ceil(0.1 * length), length)
    else:  # the last layer of the mlp: 4 hidden units to 10 classes, weights and biases
        assert (allowance.values, allowance.map_values) == (4 * 10 + 10, 0)
