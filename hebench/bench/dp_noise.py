"""What secret DP noise costs: the client's CPU with noise from :class:`SecretNoise` (ChaCha20 keyed by the OS
CSPRNG, four Gaussians summed per value) against the seeded generators hebench used before (numpy's PCG64 for
client level, torch's generator for Opacus), measured in the same run.

Client level: one round's noise for CNN_DropOut's 1,206,590 values. Sample level: DP-SGD local training
(Opacus per-sample clipping plus noise every step) of the digits MLP and of CNN_DropOut on random inputs.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch

from hebench.bench.registry import study
from hebench.config import DPSpec, TrainingSpec
from hebench.fl.training import train_locally
from hebench.models import build_model, parameter_count
from hebench.protections.dp.mechanism import SampleLevelDP
from hebench.protections.dp.noise import NoiseSource, SecretNoise

CNN_VALUES = 1_206_590


class TorchGeneratorNoise:
    """The noise Opacus drew before (``torch.normal`` from a seeded generator), as a :class:`NoiseSource`."""

    def __init__(self, seed: int) -> None:
        self.gen = torch.Generator().manual_seed(seed)

    def gaussian(self, std: float, shape: tuple[int, ...]) -> np.ndarray:
        return torch.normal(0.0, std, size=shape, generator=self.gen).double().numpy()


class NumpyNoise:
    """The client-level noise hebench drew before: numpy's default generator seeded from public values."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    def gaussian(self, std: float, shape: tuple[int, ...]) -> np.ndarray:
        return self.rng.normal(0.0, std, size=shape)


def _cpu(fn: Any, repeats: int) -> float:
    """Median thread CPU seconds of ``fn()``."""
    times = []
    for _ in range(repeats):
        start = time.thread_time()
        fn()
        times.append(time.thread_time() - start)
    return float(np.median(times))


def _training_cpu(model_name: str, shape: tuple[int, int, int], noise: NoiseSource, steps: int) -> float:
    torch.manual_seed(0)
    model = build_model(model_name, shape, 10, 16)
    x, y = torch.randn(64, *shape), torch.randint(0, 10, (64,))
    dp = SampleLevelDP(DPSpec(level="sample", clip=1.0, noise_multiplier=1.0), 64, 16, noise)
    spec = TrainingSpec(batch_size=16, lr=0.05, local_steps=steps)
    return _cpu(lambda: train_locally(model, x, y, spec, seed=1, dp=dp), repeats=3)


@study("dp_noise")
def dp_noise() -> dict[str, Any]:
    """Client CPU of secret DP noise (ChaCha20) against the seeded generators used before, client and sample level."""
    torch.set_num_threads(1)
    secret, seeded = SecretNoise(), NumpyNoise(0)
    client = {
        "values": CNN_VALUES,
        "secret_cpu_s": _cpu(lambda: secret.gaussian(1.0, (CNN_VALUES,)), repeats=5),
        "seeded_numpy_cpu_s": _cpu(lambda: seeded.gaussian(1.0, (CNN_VALUES,)), repeats=5),
    }
    client["ratio"] = client["secret_cpu_s"] / client["seeded_numpy_cpu_s"]
    sample = []
    for name, shape, steps in (("mlp", (1, 8, 8), 20), ("cnn_dropout", (1, 28, 28), 4)):
        parameters = parameter_count(build_model(name, shape, 10, 16))
        secret_s = _training_cpu(name, shape, SecretNoise(), steps)
        torch_s = _training_cpu(name, shape, TorchGeneratorNoise(0), steps)
        sample.append(
            {
                "model": name,
                "parameters": parameters,
                "steps": steps,
                "secret_cpu_s": secret_s,
                "seeded_torch_cpu_s": torch_s,
                "ratio": secret_s / torch_s,
            }
        )
    return {"benchmark": "dp_noise", "client_level": client, "sample_level": sample}
