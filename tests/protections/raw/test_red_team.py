"""raw's red team: a lying aggregator among hebench's own clients on loopback (:mod:`hebench.protections.raw.adversary`)
reads every update in plaintext, whatever model it handed out, and a network observer reads it off the wire; each
test checks the cell of raw's threat rules (``hebench/protections/raw/spec.py``) against the live protocol."""

from __future__ import annotations

import numpy as np
import torch

from hebench.inversion.attacks.trap_weights import ImprintSpec, plant_imprint, read_out
from hebench.inversion.views.inconsistency import classifier, dead_model
from hebench.protections.raw.adversary import play, red_team_view
from hebench.protections.raw.live_round import HeldModel, run_round
from hebench.protections.red_team import Target
from hebench.protections.threats import Adversary
from hebench.protections.tls.adversary import decode_wires, observe, observer_view
from tests.protections.red_team import BATCH, SHAPE, Digits, gradient_of, sizes, vector

RAW = {"mode": "raw"}


def _round(digits: Digits, net, handed: dict[int, np.ndarray], **kw):
    def clients(ctx):
        return HeldModel(ctx.client_index, sizes(net), digits.trainer(net))

    live = run_round(RAW, digits.clients, play(handed), clients, **kw)
    assert live.served is not None and not live.refusals, (live.server_error, live.refusals)
    return live


def test_red_team_raw_aggregator_reads_every_update():
    digits = Digits(3)
    net = digits.model()
    w = vector(net)
    live = _round(digits, net, dict.fromkeys(range(3), w))
    for i in range(3):  # every client's upload, read apart and exactly: the model it trained
        read = live.served.liar.read(live.served.uploads[i])
        assert np.array_equal(read.values, digits.trainer(net)(i, w))
        assert np.allclose(gradient_of(read.values, w), digits.gradient(net, i), atol=1e-5)
    # the conduit the threats suite uses gives the victim's upload
    target = Target("raw", "plain", {}, "tcp", Adversary.AGGREGATOR, None, 0, (w,) * 3, digits.trainer(net), sizes(net))
    assert np.array_equal(red_team_view(target).update, digits.trainer(net)(0, w))


def test_red_team_raw_colluding_clients_read_every_update():
    digits = Digits(3)
    net = digits.model()
    w = vector(net)
    for k in (1, 2):  # colluders hand the aggregator nothing it lacks: it reads the victim alone either way
        target = Target("raw", "plain", {}, "tcp", Adversary.COLLUDING_CLIENTS, None, k, (w,) * 3, digits.trainer(net),
                        sizes(net))  # fmt: skip
        assert target.colluders == tuple(range(3 - k, 3))
        seen = red_team_view(target)
        assert seen.update is not None and np.array_equal(seen.update, digits.trainer(net)(0, w))


def test_red_team_raw_malicious_aggregator_model_inconsistency_reads_every_update():
    digits = Digits(3)
    net = digits.model()
    dead = dead_model(net, digits.batch(0)[0])
    handed = {0: vector(net), 1: vector(dead), 2: vector(dead)}
    live = _round(digits, net, handed)
    for i in range(3):  # the lie landed: each client trained on the model it was handed
        assert np.array_equal(live.held[i][0], handed[i])
    victim = live.served.liar.read(live.served.uploads[0]).values
    assert np.allclose(gradient_of(victim, handed[0]), digits.gradient(net, 0), atol=1e-5)  # the victim, alone
    head = classifier(dead).bias
    live_part = np.concatenate([np.full(p.numel(), p is not head) for p in dead.parameters()])
    for i in (1, 2):  # the others uploaded the dead model's update: zero but for the classifier's bias
        other = gradient_of(live.served.liar.read(live.served.uploads[i]).values, handed[i])
        assert np.abs(other[live_part]).max() < 1e-6 * max(1.0, np.abs(handed[i]).max())
        assert np.abs(other[~live_part]).max() > 0


def test_red_team_raw_malicious_aggregator_trap_weights_reads_the_batch():
    digits = Digits(3)
    honest = digits.model()
    trap = plant_imprint(honest, SHAPE, digits.data.test_x, ImprintSpec(bins=64))
    w = vector(trap)
    live = _round(digits, trap, dict.fromkeys(range(3), w))
    upload = live.served.liar.read(live.served.uploads[0]).values
    assert np.array_equal(live.held[0][0], w)  # the victim held the trap model
    grads = torch.from_numpy(gradient_of(upload, w)).float().split(sizes(trap))
    shaped = tuple(g.reshape(p.shape) for g, p in zip(grads, trap.parameters(), strict=True))
    images, _ = read_out(trap, shaped, BATCH)
    x, _ = digits.batch(0)
    errors = [min(float((images[j] - x[i]).abs().max()) for j in range(BATCH)) for i in range(BATCH)]
    assert sum(e < 0.01 for e in errors) >= 3, errors  # the victim's images, read out of its update


def test_red_team_raw_observer_without_tls_reads_every_update():
    digits = Digits(3)
    net = digits.model()
    w = vector(net)
    live = _round(digits, net, dict.fromkeys(range(3), w), tapped=(0,))
    wire = decode_wires(live.taps[0])
    assert not wire.tls_only and wire.uploads
    assert np.array_equal(observe(wire).values, digits.trainer(net)(0, w))  # decoded off the wire, exactly
    target = Target("raw", "plain", {}, "tcp", Adversary.OBSERVER, None, 0, (w,) * 3, digits.trainer(net), sizes(net))
    assert np.array_equal(observer_view(target).update, digits.trainer(net)(0, w))
