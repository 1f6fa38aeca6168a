"""The text view's ``global`` mask is the mask a real run's clients agree on (FedML-HE agreement under CKKS, saved
by the run in ``masks/``), and the ``local`` one is not."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import hebench.models.language  # noqa: F401  (hides a broken torchvision before transformers loads)
from hebench.config import parse_suite
from hebench.inversion.text.campaign import TextView, mask_of, views_of
from hebench.inversion.text.sources import run_source
from hebench.inversion.text.views import TextClient
from hebench.results.run_folder import RunFolder
from hebench.runtime.runner import Runner
from tests.conftest import INSTALLED

pytestmark = [pytest.mark.slow, pytest.mark.skipif("tenseal-ckks" not in INSTALLED, reason="TenSEAL not installed")]

SUITE = {
    "name": "agreed-mask",
    "seed": 2,
    "data": {"dataset": "shakespeare", "clients": 3},
    "model": {"name": "gpt2_tiny", "pretrained": True, "fine_tuning": {"kind": "lora", "rank": 4}},
    "training": {"rounds": 1, "local_steps": 1, "batch_size": 4, "optimizer": "sgd", "lr": 0.01},
    "runtime": {"hosting": "pool", "workers": 1},
    "text_leakage": False,
    "configurations": [
        {"name": "selective", "mode": "host-he", "adapter": "tenseal-ckks", "selective": {"ratio": 0.1, "samples": 2}}
    ],
}


def test_the_global_mask_is_the_one_the_run_agreed_and_the_local_one_is_not(tmp_path):
    # Arrange: a real run of the selective configuration (its clients agree the mask under CKKS and save it)
    Runner(parse_suite(SUITE), tmp_path).run()
    agreed = np.load(RunFolder(tmp_path).mask("selective"))
    source = run_source(tmp_path)
    (config,) = source.suite.configurations
    model = source.models(config)
    held = [TextClient(b) for b in source.blocks]

    def flat(view: TextView) -> np.ndarray:
        made = mask_of(view, config, model, held[0], held, source.suite.seed)
        return torch.cat([m.reshape(-1) for m in made.values()]).numpy()

    # Act
    (overall,) = views_of(config, ("global",))
    (local,) = views_of(config, ("local",))
    # Assert: the same coordinates as the run's (CKKS's ~1e-6 error may swap a near-tie at the cut: at most 2)
    assert overall.view == "selective-global" and flat(overall).shape == agreed.shape
    assert int((flat(overall) != agreed).sum()) <= 2
    assert int((flat(local) != agreed).sum()) > 2
