"""Differential privacy on a client's update: client-level clipping + Gaussian noise, or DP-SGD (Opacus).

Client level follows Flower's client-side fixed clipping (``fixedclipping_mod``): the update (trained
model minus the round's global model) is scaled by ``min(1, clip / ||update||₂)``. Unlike Flower, which
leaves the noise to the server, each client adds N(0, (noise_multiplier·clip)²) per coordinate itself,
so what the aggregator (the attacker) receives is already noisy. The noise is seeded per client and round
from the run's seed, so a run is reproducible.

Sample level runs local training as DP-SGD with Opacus (per-sample gradients clipped to ``clip``, noise
``noise_multiplier·clip`` per step) and keeps an Opacus accountant over every step of the run, so ε at
``delta`` after each round can be recorded.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch
from torch import nn

from hebench.errors import ParameterError
from hebench.suite import DPSpec

INSTALL_HINT = "pip install 'hebench[dp]' (Opacus)"


def noise_rng(seed: int, round_index: int, client: int) -> np.random.Generator:
    """The Gaussian noise source of one client in one round, derived from the run's seed."""
    return np.random.default_rng([seed, round_index, client, 0xD1FF])


def clip_update(update: np.ndarray, clip: float) -> np.ndarray:
    """``update`` scaled down to L2 norm at most ``clip`` (unchanged if already within)."""
    norm = float(np.linalg.norm(update.astype(np.float64)))
    return update if norm <= clip else update * np.float32(clip / norm)


def privatize_update(update: np.ndarray, spec: DPSpec, rng: np.random.Generator) -> np.ndarray:
    """Client-level DP: clip to ``spec.clip``, add N(0, (noise_multiplier·clip)²) to every coordinate."""
    clipped = clip_update(np.asarray(update, dtype=np.float32), spec.clip)
    noise = rng.normal(0.0, spec.noise_multiplier * spec.clip, size=clipped.shape)
    return (clipped + noise).astype(np.float32)


def _opacus() -> Any:
    try:
        import opacus
    except ImportError:
        raise ParameterError("dp level: sample needs Opacus, which is not installed", INSTALL_HINT) from None
    return opacus


class SampleLevelDP:
    """DP-SGD for one client's local training, and its privacy spent so far (one accountant per client)."""

    def __init__(self, spec: DPSpec, samples: int, batch_size: int) -> None:
        opacus = _opacus()
        self.spec = spec
        self.sample_rate = min(1.0, batch_size / max(samples, 1))
        self.batch_size = batch_size
        self.accountant = opacus.accountants.create_accountant(spec.accountant)

    def check(self, model: nn.Module) -> None:
        """Refuse a model Opacus cannot compute per-sample gradients for (e.g. BatchNorm)."""
        errors = _opacus().validators.ModuleValidator.validate(model, strict=False)
        if errors:
            raise ParameterError(
                f"dp level: sample cannot train this model: {errors[0]}",
                "choose a model without BatchNorm (mlp, lenet, cnn_dropout) or use dp level: client",
            )

    @contextmanager
    def wrap(self, model: nn.Module, optimizer: torch.optim.Optimizer) -> Iterator[torch.optim.Optimizer]:
        """``optimizer`` as a DP-SGD optimizer over ``model`` (per-sample hooks removed afterwards)."""
        opacus = _opacus()
        gsm = opacus.GradSampleModule(model)
        dp_opt = opacus.optimizers.DPOptimizer(
            optimizer,
            noise_multiplier=self.spec.noise_multiplier,
            max_grad_norm=self.spec.clip,
            expected_batch_size=self.batch_size,
        )
        try:
            with warnings.catch_warnings():  # Opacus' hooks on a first layer whose input needs no gradient
                warnings.filterwarnings("ignore", message="Full backward hook is firing")
                yield dp_opt
        finally:
            gsm._close()  # removes the hooks and per-sample gradients; `model` is trained in place

    def account(self, steps: int) -> None:
        """Charge ``steps`` noisy steps at this client's sampling rate."""
        for _ in range(steps):
            self.accountant.step(noise_multiplier=self.spec.noise_multiplier, sample_rate=self.sample_rate)

    def epsilon(self) -> float | None:
        """ε spent so far at the configured δ (None without noise: no finite guarantee)."""
        if self.spec.noise_multiplier == 0:
            return None
        return float(self.accountant.get_epsilon(delta=self.spec.delta))
