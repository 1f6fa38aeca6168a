"""The aggregator's running sum (updates added as they arrive) equals FedAvg over every update at once."""

from __future__ import annotations

import numpy as np
import pytest

from hebench.crypto import create_adapter, load_adapter
from hebench.errors import PartyError
from hebench.fl.fedavg import fedavg_weights, weighted_sum
from hebench.fl.running_sum import RunningSum
from hebench.protections.selective.split import PLAIN
from tests.conftest import fast_params

ADAPTERS = ["plain", "tenseal-ckks", "seal-bfv"]


def _keys(name):
    secret = create_adapter(name, fast_params(name))
    secret.keygen()
    return secret, load_adapter(secret.export_keys(secret=False))


def _update(public, cipher_values, plain_values):
    blobs = [public.serialize(public.encrypt(v)) for v in cipher_values]
    blobs += [PLAIN.serialize(PLAIN.encrypt(v)) for v in plain_values]
    return {"plain_parts": len(plain_values)}, tuple(blobs)


@pytest.mark.parametrize("name", ADAPTERS)
def test_running_sum_in_any_arrival_order_equals_fedavg_of_all_updates(name):
    secret, public = _keys(name)
    rng = np.random.default_rng(7)
    clients = range(5)
    cipher = {i: [rng.uniform(-1, 1, 40), rng.uniform(-1, 1, 9)] for i in clients}
    plain = {i: [rng.uniform(-1, 1, 6).astype(np.float32)] for i in clients}
    weights = fedavg_weights({0: 3, 1: 5, 2: 7, 3: 11, 4: 6})  # total 32: within seal-bfv's exact weights
    updates = {i: _update(public, cipher[i], plain[i]) for i in clients}

    total = RunningSum(public, weights)
    for i in (3, 0, 4, 1, 2):  # arrival order differs from client order
        total.add(i, updates[i])
    blobs, plain_parts = total.blobs()

    at_once = weighted_sum(public, {i: [public.encrypt(v) for v in cipher[i]] for i in clients}, weights)
    assert plain_parts == 1 and len(blobs) == len(at_once) + 1
    for got, want in zip(blobs[:-1], at_once, strict=True):
        np.testing.assert_allclose(
            secret.decrypt(public.deserialize(got)), secret.decrypt(want), atol=2 * secret.info().precision
        )
    want_plain = sum(weights[i] * plain[i][0].astype(np.float64) for i in clients)
    np.testing.assert_allclose(PLAIN.decrypt(PLAIN.deserialize(blobs[-1])), want_plain, atol=1e-6)
    assert total.update_bytes == {i: sum(len(b) for b in updates[i][1]) for i in clients}


def test_running_sum_refuses_repeated_unexpected_and_missing_updates():
    _, public = _keys("plain")
    update = _update(public, [np.ones(3)], [])
    total = RunningSum(public, {0: 0.5, 1: 0.5})
    total.add(0, update)
    with pytest.raises(PartyError, match="repeated"):
        total.add(0, update)
    with pytest.raises(PartyError, match="unexpected"):
        total.add(7, update)
    with pytest.raises(PartyError, match=r"no update from client\(s\) \[1\]"):
        total.blobs()


@pytest.mark.parametrize("held_bytes", [0, 600])
def test_finished_chunks_beyond_the_memory_budget_wait_in_a_file_and_come_back_byte_for_byte(held_bytes):
    """``runtime.aggregate_memory_mb``: chunk sums past the budget are written out, not held, and the aggregate
    streamed from them is the one held wholly in memory."""
    _, public = _keys("seal-bfv")
    rng = np.random.default_rng(3)
    clients = range(3)
    updates = {i: _update(public, [rng.uniform(-1, 1, 50) for _ in range(4)], []) for i in clients}
    weights = fedavg_weights(dict.fromkeys(clients, 1))

    def summed(budget):
        total = RunningSum(public, weights, held_bytes=budget)
        for i in clients:
            total.add(i, updates[i])
        return total

    in_memory, spilling = summed(2**40), summed(held_bytes)
    assert spilling.finished.in_memory <= held_bytes and spilling.finished.spilled > 0
    assert in_memory.finished.spilled == 0
    assert [c.blob for c in spilling.stream()] == [c.blob for c in in_memory.stream()]
    assert spilling.finished._file is None  # closed once streamed
