"""SecAgg+ on real authenticated channels, in threads: the sum, dropout recovery, the mask generators."""

from __future__ import annotations

import secrets
import threading

import numpy as np
import pytest

from hebench.errors import PartyError
from hebench.fl.mask_prg import MASK_GENERATORS
from hebench.fl.meter import PhaseMeter
from hebench.fl.secagg_client import SecAggClientRound
from hebench.fl.secagg_server import collect_secagg
from hebench.modes.params import SecAggParams
from hebench.net.transport import Message, accept, connect, listen


class DropsAfterSharing(SecAggClientRound):
    """A client that shares its keys and shares, then dies before its masked upload."""

    def masked_upload(self, vector: np.ndarray) -> None:
        self.channel.close()
        raise SystemExit  # ends the thread


def run_round(params: SecAggParams, vectors: dict[int, np.ndarray], samples: dict[int, int], drop: set[int]):
    key = secrets.token_bytes(32)
    door = listen(key)
    errors: list[BaseException] = []

    def client(i: int) -> None:
        try:
            ch = connect(door.address, key, "aggregator", 30)
            ch.send(Message("hello", {"client": i}))
            kind = DropsAfterSharing if i in drop else SecAggClientRound
            kind(i, ch, params, PhaseMeter()).run(vectors[i], samples[i], {})
        except SystemExit:
            pass
        except BaseException as err:
            errors.append(err)

    threads = [threading.Thread(target=client, args=(i,)) for i in vectors]
    for t in threads:
        t.start()
    channels = {}
    for _ in vectors:
        ch = accept(door, "client", 30)
        channels[int(ch.recv("hello").meta["client"])] = ch
    meter = PhaseMeter()
    result = collect_secagg(channels, params, meter)
    for t in threads:
        t.join(30)
    door.close()
    assert not errors, errors
    return result, meter.take()["phases"]


def fedavg(vectors, samples, members):
    total = sum(samples[i] for i in members)
    return sum(samples[i] / total * vectors[i].astype(np.float64) for i in members)


def inputs(n: int, size: int = 500):
    rng = np.random.default_rng(7)
    return {i: rng.normal(0, 1, size).astype(np.float32) for i in range(n)}, {i: 10 + 3 * i for i in range(n)}


@pytest.mark.parametrize("prg", ["full-key", "flwr-32bit"])
def test_unmasked_sum_equals_plain_fedavg_within_the_quantisation_bound(prg):
    params = SecAggParams(num_shares=3, reconstruction_threshold=2, prg=prg)
    vectors, samples = inputs(5)
    result, phases = run_round(params, vectors, samples, drop=set())
    step = 2 * params.clipping_range / params.quantization_range
    bound = len(vectors) * step  # each client's stochastic rounding errs by under one step (weights sum to 1)
    err = np.abs(result.average - fedavg(vectors, samples, vectors))
    assert err.max() < bound
    assert err.max() > 0  # quantised, not the plain vector passed through
    assert set(phases) == {"advertise_keys", "share_keys", "collect_masked", "unmask"}


def test_a_client_dropping_after_sharing_its_keys_leaves_the_correct_sum_of_the_survivors():
    params = SecAggParams(num_shares=5, reconstruction_threshold=2)
    vectors, samples = inputs(5)
    result, _ = run_round(params, vectors, samples, drop={2})
    survivors = [0, 1, 3, 4]
    assert result.survivors == tuple(survivors) and result.dropped == (2,)
    step = 2 * params.clipping_range / params.quantization_range
    total_w = sum(samples[i] for i in survivors) / sum(samples.values())
    err = np.abs(result.average - fedavg(vectors, samples, survivors))
    assert err.max() < len(survivors) * step / total_w
    assert sum(result.weights.values()) == pytest.approx(1.0)


def test_a_client_refuses_to_reveal_both_secrets_of_one_peer():
    class Fake:
        def __init__(self, msg):
            self.msg, self.sent = msg, []

        def recv(self, kind):
            return self.msg

        def send(self, msg):
            self.sent.append(msg)

    greedy = Message("sa_unmask", {"survivors": [1], "dropped": [1]})
    c = SecAggClientRound(0, Fake(greedy), SecAggParams(), PhaseMeter())
    c.held = {1: (b"seed", b"key")}
    with pytest.raises(PartyError, match="both secrets"):
        c.unmask()


def test_masks_differ_by_generator_and_the_flwr_one_has_32_bit_seeds():
    key_a = b"A" * 40 + b"xyzw"
    # two keys whose 32-bit XOR-folds agree give flwr's generator the same mask; full-key tells them apart
    key_b = b"A" * 36 + b"xyzw" + b"AAAA"
    flwr, full = MASK_GENERATORS["flwr-32bit"], MASK_GENERATORS["full-key"]
    assert np.array_equal(flwr(key_a, 2**32, 100), flwr(key_b, 2**32, 100))
    assert not np.array_equal(full(key_a, 2**32, 100), full(key_b, 2**32, 100))


def test_security_note_states_the_work_factor_for_the_neighbour_count():
    note = SecAggParams(num_shares=3, prg="flwr-32bit").security(clients=8)
    assert note["neighbours"] == 2 and note["work_factor_bits"] == 64
    assert SecAggParams(num_shares=3).security(clients=2)["work_factor_bits"] == 128  # one neighbour, full key
