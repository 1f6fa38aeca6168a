"""DP's red team: the lying aggregator among hebench's own raw clients, each training for real (its
:class:`~hebench.fl.local_model.LocalModel`) under client-level DP, reads the victim's upload whole, and obtains
exactly what the mechanism lets through: the clipped update plus noise of the stated scale that it cannot remove
(a fresh secret stream per upload), and no more. The cell of ``hebench/protections/dp/threats.py``; the bound that
noise implies on any reconstruction is :mod:`hebench.inversion.scoring.dp_bound`'s."""

from __future__ import annotations

import dataclasses
import queue

import numpy as np
import torch

from hebench.data.registry import load_federated
from hebench.fl.local_model import LocalModel
from hebench.fl.update import model_vector
from hebench.models import build_model
from hebench.protections.dp.mechanism import clip_update
from hebench.protections.dp.noise import CLIENT_STREAM, SeededNoise
from hebench.protections.raw.adversary import play
from hebench.protections.raw.live_round import run_round
from tests.protections.red_team import SHAPE

SEED, CLIP, Z = 0, 0.2, 0.25  # noise std z·clip = 0.05 per coordinate; the update's norm is about 0.4


def _clients(ctx):
    """A real client's model side: its shard of digits, trained as the suite says (DP as its configuration says)."""
    data = load_federated(ctx.suite.data, ctx.suite.seed)
    test = (data.test_x, data.test_y) if ctx.client_index == 0 else None
    own = dataclasses.replace(ctx, data=data.clients[ctx.client_index], test=test)
    return LocalModel(own, queue.Queue())


def _victims_upload(dp: dict | None, handed: np.ndarray) -> np.ndarray:
    """Client 0's upload of round 1, as the lying aggregator read it, after it handed every client ``handed``."""
    config = {"mode": "raw", **({"dp": dp} if dp else {})}
    live = run_round(config, 3, play(dict.fromkeys(range(3), handed)), _clients, shape=(SHAPE, 10))
    assert live.served is not None and not live.refusals, (live.server_error, live.refusals)
    return live.served.liar.read(live.served.uploads[0]).values.astype(np.float64)


def test_red_team_dp_aggregator_reads_the_clipped_update_and_noise_it_cannot_remove():
    torch.manual_seed(SEED)
    w = model_vector(build_model("mlp", SHAPE, 10, 16))  # the global model the aggregator hands out
    dp = {"level": "client", "clip": CLIP, "noise_multiplier": Z}
    clean = _victims_upload(None, w) - w  # the victim's update without DP (its training is seeded: the same below)
    clipped = clip_update(clean.astype(np.float32), CLIP).astype(np.float64)
    assert np.linalg.norm(clean) > CLIP  # the clip binds on this update
    first, second = (_victims_upload(dp, w) - w - clipped for _ in range(2))
    for noise in (first, second):  # what it obtains: the clipped update plus N(0, (z·clip)²) per coordinate
        assert abs(noise.std() / (Z * CLIP) - 1) < 0.05 and abs(noise.mean()) < 5 * Z * CLIP / np.sqrt(len(noise))
    # no more: the noise is fresh for each upload, and nothing the aggregator holds regenerates it
    public = SeededNoise.public(SEED, 1, 0, CLIENT_STREAM).gaussian(Z * CLIP, clean.shape)
    assert abs(np.corrcoef(first, second)[0, 1]) < 0.05 and abs(np.corrcoef(first, public)[0, 1]) < 0.05
    # control: with reproducible_noise (debugging only) the aggregator regenerates it and reads the clipped update
    seeded = _victims_upload({**dp, "reproducible_noise": True}, w) - w - public
    assert np.abs(seeded - clipped).max() < 1e-5
