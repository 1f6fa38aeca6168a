"""Selective encryption's red team: the lying aggregator among hebench's host-he clients that encrypt only the masked
coordinates reads exactly the plaintext coordinates of every upload, honest or lying about the models it hands
out, and nothing of the encrypted ones. The cells of ``hebench/protections/selective/threats.py``."""

from __future__ import annotations

import numpy as np
import pytest

from hebench.inversion.views.inconsistency import dead_model
from hebench.protections.host_he.adversary import red_team_view
from hebench.protections.raw.adversary import play
from hebench.protections.raw.live_round import HeldModel, run_round
from hebench.protections.red_team import Target
from hebench.protections.threats import Adversary, Strategy
from tests.conftest import INSTALLED
from tests.protections.red_team import Digits, sizes, vector, windows

pytestmark = pytest.mark.skipif("tenseal-ckks" not in INSTALLED, reason="TenSEAL not installed")

HOST_HE = {"mode": "host-he", "adapter": "tenseal-ckks"}


def _mask(size: int) -> np.ndarray:
    """30 % of the coordinates encrypted, the rest in the clear."""
    return np.random.default_rng(4).random(size) < 0.3


def _reads_the_visible_coordinates_only(handed: dict[int, np.ndarray], strategy: Strategy | None) -> None:
    digits = Digits(3)
    net = digits.model()
    mask = _mask(sum(sizes(net)))

    def clients(ctx):
        return HeldModel(ctx.client_index, sizes(net), digits.trainer(net), mask)

    live = run_round(HOST_HE, 3, play(handed, mask), clients, colluders=(2,))
    assert live.served is not None and not live.refusals, (live.server_error, live.refusals)
    liar = live.served.liar
    for i in range(3):
        upload = live.served.uploads[i]
        sent = digits.trainer(net)(i, live.held[i][0])  # what client i trained, from the model it opened
        read = liar.read(upload, mask)
        assert read.visible is not None and np.array_equal(read.visible, ~mask)  # the plaintext part, exactly
        assert np.array_equal(read.values[~mask], sent[~mask]) and not read.values[mask].any()
        received = b"".join((*upload.cipher, *upload.plain))
        assert not any(window in received for window in windows(sent[mask]))  # nothing of the encrypted part
        assert any(window in received for window in windows(sent[~mask]))  # (the scan's control)
        whole = liar.read(upload, mask, key_set=liar.aggregation.key_set(2, liar.epoch))  # control: a key holder
        assert whole.visible is None and np.abs(whole.values - sent).max() < 1e-4
    models = tuple(handed[i] for i in range(3))
    adversary = Adversary.AGGREGATOR if strategy is None else Adversary.MALICIOUS
    target = Target("host-he", "tenseal-ckks", {}, "tcp", adversary, strategy, 0, models, digits.trainer(net),
                    sizes(net), encrypted=mask)  # fmt: skip
    seen = red_team_view(target)
    assert seen.visible is not None and np.array_equal(seen.visible, ~mask)
    assert seen.update is not None and not seen.update[mask].any()


def test_red_team_selective_aggregator_reads_the_visible_coordinates_only():
    w = vector(Digits(3).model())
    _reads_the_visible_coordinates_only(dict.fromkeys(range(3), w), None)


def test_red_team_selective_malicious_aggregator_reads_the_visible_coordinates_only():
    digits = Digits(3)
    net = digits.model()
    dead = vector(dead_model(net, digits.batch(0)[0]))
    _reads_the_visible_coordinates_only({0: vector(net), 1: dead, 2: dead}, Strategy.MODEL_INCONSISTENCY)
