"""Differential privacy on a client's update: client-level clipping + Gaussian noise, or DP-SGD (Opacus).

Client level follows Flower's client-side fixed clipping (``fixedclipping_mod``): the update (trained
model minus the round's global model) is scaled by ``min(1, clip / ||update||₂)``. Unlike Flower, which
leaves the noise to the server, each client adds N(0, (noise_multiplier·clip)²) per coordinate itself,
so what the aggregator (the attacker) receives is already noisy. The noise comes from a
:class:`~hebench.protections.dp.noise.NoiseSource`: secret to the client (the OS CSPRNG) unless the suite asks for
``reproducible_noise`` (debugging: the aggregator can then regenerate and remove it).

Sample level runs local training as DP-SGD with Opacus (per-sample gradients clipped to ``clip``, noise
``noise_multiplier·clip`` per step, drawn from the same kind of source) and keeps an Opacus accountant over
every step of the run, so ε at ``delta`` after each round can be recorded; the steps charged are kept in
a ledger (:mod:`hebench.protections.dp.ledger`) so that ε continues across ``--resume``.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any

import numpy as np
import torch
from torch import nn

from hebench.errors import ParameterError
from hebench.protections.dp.noise import NoiseSource, SecretNoise
from hebench.protections.dp.spec import DPSpec

INSTALL_HINT = "pip install 'hebench[dp]' (Opacus)"


def clip_update(update: np.ndarray, clip: float) -> np.ndarray:
    """``update`` scaled down to L2 norm at most ``clip`` (unchanged if already within)."""
    norm = float(np.linalg.norm(update.astype(np.float64)))
    return update if norm <= clip else update * np.float32(clip / norm)


def privatize_update(update: np.ndarray, spec: DPSpec, noise: NoiseSource) -> np.ndarray:
    """Client-level DP: clip to ``spec.clip``, add N(0, (noise_multiplier·clip)²) to every coordinate."""
    clipped = clip_update(np.asarray(update, dtype=np.float32), spec.clip)
    return (clipped + noise.gaussian(spec.noise_multiplier * spec.clip, clipped.shape)).astype(np.float32)


def _opacus() -> Any:
    try:
        import opacus
    except ImportError:
        raise ParameterError("dp level: sample needs Opacus, which is not installed", INSTALL_HINT) from None
    return opacus


class SampleLevelDP:
    """DP-SGD for one client's local training, and its privacy spent so far (one accountant per client).

    ``noise``: where the per-step Gaussian noise comes from (default: a :class:`SecretNoise` of this client's).
    """

    def __init__(self, spec: DPSpec, samples: int, batch_size: int, noise: NoiseSource | None = None) -> None:
        opacus = _opacus()
        self.spec = spec
        self.sample_rate = min(1.0, batch_size / max(samples, 1))
        self.batch_size = batch_size
        self.noise: NoiseSource = noise if noise is not None else SecretNoise()
        self.accountant = opacus.accountants.create_accountant(spec.accountant)
        self.steps = 0  # noisy steps charged to the accountant (replayed ones included)

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
        dp_opt = _sourced_optimizer()(
            optimizer,
            noise=self.noise,
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

    def account(self, steps: int, sample_rate: float | None = None, noise_multiplier: float | None = None) -> None:
        """Charge ``steps`` noisy steps, by default at this client's sampling rate and noise (a replayed
        ledger entry gives the ones it was taken with)."""
        q = self.sample_rate if sample_rate is None else sample_rate
        z = self.spec.noise_multiplier if noise_multiplier is None else noise_multiplier
        for _ in range(steps):
            self.accountant.step(noise_multiplier=z, sample_rate=q)
        self.steps += steps

    def snapshot(self) -> tuple[int, Any]:
        """The privacy spent so far, to :meth:`restore` if the steps taken next are never released."""
        return self.steps, copy.deepcopy(self.accountant.history)

    def restore(self, snapshot: tuple[int, Any]) -> None:
        """Back to ``snapshot``: the steps since were taken on a model that never left this client."""
        self.steps, self.accountant.history = snapshot[0], copy.deepcopy(snapshot[1])

    def epsilon(self) -> float | None:
        """ε spent so far at the configured δ (None without noise: no finite guarantee)."""
        if self.spec.noise_multiplier == 0 or self.steps == 0:
            return None
        return float(self.accountant.get_epsilon(delta=self.spec.delta))

    def report(self) -> dict[str, Any]:
        """What a round record says about the privacy spent: ε and how it was accounted."""
        epsilon = self.epsilon()
        return {
            "dp_accountant": self.spec.accountant,
            "dp_sample_rate": self.sample_rate,
            "dp_steps": self.steps,
            "dp_delta": self.spec.delta,
            **({} if epsilon is None else {"dp_epsilon": epsilon}),
        }


@cache
def _sourced_optimizer() -> type:
    """Opacus' ``DPOptimizer`` drawing its noise from a :class:`NoiseSource` (built once Opacus is known)."""
    opacus = _opacus()
    from opacus.optimizers.optimizer import _check_processed_flag, _mark_as_processed

    class SourcedNoiseDPOptimizer(opacus.optimizers.DPOptimizer):
        def __init__(self, optimizer: torch.optim.Optimizer, *, noise: NoiseSource, **kwargs: Any) -> None:
            super().__init__(optimizer, **kwargs)
            self.noise_source = noise

        def add_noise(self) -> None:
            """As Opacus' ``add_noise``, with the noise from ``noise_source`` instead of torch's generator."""
            std = self.noise_multiplier * self.max_grad_norm
            for p in self.params:
                _check_processed_flag(p.summed_grad)
                drawn = torch.from_numpy(self.noise_source.gaussian(std, tuple(p.summed_grad.shape)))
                p.grad = (p.summed_grad + drawn.to(p.summed_grad.dtype)).view_as(p)
                _mark_as_processed(p.summed_grad)

    return SourcedNoiseDPOptimizer
