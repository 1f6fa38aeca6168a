"""The encrypted weighted sum equals a hand-computed FedAvg."""

from __future__ import annotations

import numpy as np
import pytest

from hebench.crypto import create_adapter, load_adapter
from hebench.errors import PartyError
from hebench.fl.fedavg import fedavg_weights, weighted_sum
from tests.conftest import INSTALLED, fast_params


@pytest.mark.parametrize("name", INSTALLED)
def test_weighted_sum_equals_hand_computed_fedavg(name):
    secret = create_adapter(name, fast_params(name))
    secret.keygen()
    public = load_adapter(secret.export_keys(secret=False))
    updates = {0: np.array([1.0, -2.0, 0.5]), 1: np.array([3.0, 0.0, -0.5]), 2: np.array([-1.0, 4.0, 2.0])}
    weights = fedavg_weights({0: 10, 1: 30, 2: 60})
    assert weights == {0: 0.1, 1: 0.3, 2: 0.6}
    total = weighted_sum(public, {i: [public.encrypt(v)] for i, v in updates.items()}, weights)
    want = np.array([0.1 * 1 + 0.3 * 3 + 0.6 * -1, 0.1 * -2 + 0.6 * 4, 0.1 * 0.5 - 0.3 * 0.5 + 0.6 * 2])
    np.testing.assert_allclose(secret.decrypt(total[0]), want, atol=secret.info().precision)


def test_fedavg_refuses_empty_rounds():
    with pytest.raises(PartyError, match="no training samples"):
        fedavg_weights({0: 0})
    with pytest.raises(PartyError, match="no updates"):
        weighted_sum(create_adapter("plain"), {}, {})
