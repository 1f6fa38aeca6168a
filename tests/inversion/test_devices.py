"""``device: auto`` runs the attacks on CUDA when a GPU is usable (batches in the attacking process, each sized
by the CUDA memory probe), else on the CPU's worker processes. No GPU is needed: torch's answer is stood in for."""

from __future__ import annotations

from types import SimpleNamespace

import torch

from hebench.inversion import parallel
from hebench.inversion.attacks import AttackConfig
from hebench.inversion.devices import resolve_device
from hebench.inversion.parallel import RestartPool


def test_auto_is_cuda_when_a_gpu_is_usable_and_the_cpu_otherwise(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert resolve_device("auto") == "cuda"
    gpu = RestartPool(4, "auto")
    assert (gpu.device, gpu.workers) == ("cuda", 1)  # one process drives the GPU, whatever workers says
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device("auto") == "cpu" and resolve_device("cuda") == "cuda"
    cpu = RestartPool(2, "auto")
    assert (cpu.device, cpu.workers) == ("cpu", 2)


def test_a_cuda_batch_is_sized_by_the_memory_probe_not_the_cpu_cap(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    probed = []
    monkeypatch.setattr(parallel, "_move", lambda observations, device: observations)
    monkeypatch.setattr(parallel, "cuda_cap", lambda observations, cfg, seeds: probed.append(len(observations)) or 3)
    monkeypatch.setattr(parallel, "cpu_cap", lambda obs, cfg: 1 / 0)  # never asked on CUDA
    obs = SimpleNamespace(gradients=[torch.zeros(1)])
    jobs = [(obs, AttackConfig(), seed, None) for seed in range(10)]
    assert RestartPool(None, "auto")._cap(jobs) == 3  # type: ignore[arg-type]
    assert probed == [4]  # the probe runs a few restarts, not the whole group
