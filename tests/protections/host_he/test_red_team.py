"""host-he's red team: the lying aggregator of the direct link among hebench's own host-he clients on loopback,
alone (it holds the public set: it can hand out any model, and reads no upload), with a colluding client's key set
(every upload), and a network observer that reads the secret set off an unencrypted key push. Each test checks one
cell of host-he's threat rules (``hebench/protections/host_he/spec.py``) against the live protocol."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from hebench.crypto import create_adapter, load_adapter
from hebench.inversion.attacks.trap_weights import ImprintSpec, plant_imprint, read_out
from hebench.inversion.views.inconsistency import dead_model
from hebench.protections.host_he.adversary import red_team_view
from hebench.protections.raw.adversary import play
from hebench.protections.raw.live_round import HeldModel, run_round
from hebench.protections.red_team import Target
from hebench.protections.threats import Adversary, Strategy
from hebench.protections.tls.adversary import best_key, decode_wires, observe, observer_view
from tests.conftest import INSTALLED
from tests.protections.red_team import BATCH, SHAPE, Digits, gradient_of, sizes, vector, windows

pytestmark = pytest.mark.skipif("tenseal-ckks" not in INSTALLED, reason="TenSEAL not installed")

HOST_HE = {"mode": "host-he", "adapter": "tenseal-ckks"}
CKKS_ERROR = 1e-4  # CKKS's approximation on these weights, and a step of 0.5 turned back into a gradient


def _round(digits: Digits, net, handed: dict[int, np.ndarray], **kw):
    def clients(ctx):
        return HeldModel(ctx.client_index, sizes(net), digits.trainer(net))

    live = run_round(HOST_HE, digits.clients, play(handed), clients, **kw)
    assert live.served is not None and not live.refusals, (live.server_error, live.refusals)
    return live


def _target(digits: Digits, net, adversary: Adversary, k: int = 0, strategy: Strategy | None = None, models=None):
    models = models or (vector(net),) * digits.clients
    return Target("host-he", "tenseal-ckks", {}, "tcp", adversary, strategy, k, models, digits.trainer(net), sizes(net))


@pytest.fixture(scope="module")
def honest():
    """One live round, the same model handed to all; client 2 colludes (hands the aggregator its key set)."""
    digits = Digits(3)
    net = digits.model()
    w = vector(net)
    return digits, net, w, _round(digits, net, dict.fromkeys(range(3), w), colluders=(2,))


def test_red_team_host_he_aggregator_reads_nothing(honest):
    digits, net, w, live = honest
    liar, upload = live.served.liar, live.served.uploads[0]
    assert not liar.public.has_secret_key
    assert liar.read(upload).values is None  # the adapter refuses to decrypt with the public set
    sent = digits.trainer(net)(0, w)  # what the victim trained (CKKS gives it back to 1e-6: a byte scan suffices)
    assert not any(window in b"".join(upload.cipher) for window in windows(sent))
    # control: the same bytes are the update, for a holder of the secret set
    colluder = liar.aggregation.key_set(2, liar.epoch)
    assert np.abs(liar.read(upload, key_set=colluder).values - sent).max() < CKKS_ERROR
    assert red_team_view(_target(digits, net, Adversary.AGGREGATOR)).update is None


def test_red_team_host_he_colluding_clients_decrypt_every_update(honest):
    digits, net, w, live = honest
    liar = live.served.liar
    colluder = liar.aggregation.key_set(2, liar.epoch)  # the set client 2 got from the key authority
    for i in range(3):  # every client's upload, the victim's first
        read = liar.read(live.served.uploads[i], key_set=colluder).values
        assert np.abs(gradient_of(read, w) - digits.gradient(net, i)).max() < CKKS_ERROR / 0.5 * 4
    other = create_adapter("tenseal-ckks", {})  # control: another authority's secret set opens none of them
    other.keygen()
    assert liar.read(live.served.uploads[0], key_set=load_adapter(other.export_keys(secret=True))).values is None
    seen = red_team_view(_target(digits, net, Adversary.COLLUDING_CLIENTS, k=1))
    assert seen.update is not None and np.abs(seen.update - digits.trainer(net)(0, w)).max() < CKKS_ERROR


def test_red_team_host_he_key_holder_decrypts_every_update(honest):
    digits, net, w, live = honest
    liar = live.served.liar
    holder = liar.aggregation.key_set(2, liar.epoch)
    assert holder.has_secret_key  # a key holder of host-he is any client: it holds the epoch's one secret set
    for i in range(3):
        assert liar.read(live.served.uploads[i], key_set=holder).values is not None
    seen = red_team_view(_target(digits, net, Adversary.KEY_HOLDER))
    assert seen.update is not None and np.abs(seen.update - digits.trainer(net)(0, w)).max() < CKKS_ERROR


def test_red_team_host_he_malicious_aggregator_model_inconsistency_reads_nothing():
    digits = Digits(3)
    net = digits.model()
    dead = dead_model(net, digits.batch(0)[0])
    handed = {0: vector(net), 1: vector(dead), 2: vector(dead)}
    live = _round(digits, net, handed, colluders=(2,))
    for i in range(3):  # the lie landed: each client opened the model it was handed (under the public set)
        assert np.abs(live.held[i][0] - handed[i]).max() < CKKS_ERROR * max(1.0, np.abs(handed[i]).max())
    liar = live.served.liar
    assert all(liar.read(live.served.uploads[i]).values is None for i in range(3))  # and reads no upload
    # control: the victim's upload held its update on the real model, for a holder of the secret set
    victim = liar.read(live.served.uploads[0], key_set=liar.aggregation.key_set(2, liar.epoch)).values
    assert np.abs(gradient_of(victim, handed[0]) - digits.gradient(net, 0)).max() < CKKS_ERROR / 0.5 * 4
    models = tuple(handed[i] for i in range(3))
    target = _target(digits, net, Adversary.MALICIOUS, strategy=Strategy.MODEL_INCONSISTENCY, models=models)
    assert red_team_view(target).update is None


def test_red_team_host_he_malicious_aggregator_trap_weights_reads_nothing():
    digits = Digits(3)
    trap = plant_imprint(digits.model(), SHAPE, digits.data.test_x, ImprintSpec(bins=64))
    w = vector(trap)
    live = _round(digits, trap, dict.fromkeys(range(3), w), colluders=(2,))
    assert np.abs(live.held[0][0] - w).max() < CKKS_ERROR * np.abs(w).max()  # the victim trained the trap model
    liar = live.served.liar
    assert liar.read(live.served.uploads[0]).values is None  # but uploaded ciphertext the aggregator cannot open
    # control: the upload did carry the batch, for a holder of the secret set (the imprint reads it out)
    upload = liar.read(live.served.uploads[0], key_set=liar.aggregation.key_set(2, liar.epoch)).values
    grads = torch.from_numpy(gradient_of(upload, live.held[0][0])).float().split(sizes(trap))
    images, _ = read_out(trap, tuple(g.reshape(p.shape) for g, p in zip(grads, trap.parameters(), strict=True)), 4)
    x, _ = digits.batch(0)
    assert min(float((images[j] - x[0]).abs().max()) for j in range(BATCH)) < 0.1
    target = _target(digits, trap, Adversary.MALICIOUS, strategy=Strategy.TRAP_WEIGHTS)
    assert red_team_view(target).update is None


def test_red_team_host_he_observer_without_tls_reads_the_key_set_and_every_update():
    digits = Digits(3)
    net = digits.model()
    w = vector(net)
    live = _round(digits, net, dict.fromkeys(range(3), w), tapped=(0,))
    wire = decode_wires(live.taps[0])
    assert not wire.tls_only and wire.key_sets  # the key authority's push to the victim, read off the wire
    assert best_key(wire).has_secret_key  # the epoch's secret set, whole
    read = observe(wire).values
    assert read is not None and np.abs(read - digits.trainer(net)(0, w)).max() < CKKS_ERROR
    seen = observer_view(_target(digits, net, Adversary.OBSERVER))
    assert seen.update is not None and np.abs(seen.update - digits.trainer(net)(0, w)).max() < CKKS_ERROR
