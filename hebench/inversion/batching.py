"""Which restarts run together, and how many at once.

Restarts batch when their observations share one model (same weights, by fingerprint) and one threat model
(images per restart, clients, local steps, masked or not): then one ``vmap``-ed pass evaluates all of them.
Restarts of different images, model seeds of equal weights, and configurations with the same model all
qualify. A restart's arithmetic depends on the batch it runs in at the level of float rounding (``vmap``'s
kernels block by batch size), so batches are cut by the cores this machine offers, never by the ``workers``
option: on one machine a suite gives the same records with any number of workers. A batch's size is capped
by memory: on CUDA from a probe (one step of a few restarts, its peak
memory per restart against the memory free), on the CPU from an estimate (the L-BFGS history and a dozen
model-sized tensors per restart) within a per-worker budget.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Hashable, Sequence
from dataclasses import replace

import torch

from hebench.inversion.attacks import AttackConfig, reconstruct
from hebench.inversion.optim.lbfgs import BatchedLBFGS
from hebench.inversion.views.observation import Observation

CPU_MOST = 64  # restarts per batch on the CPU: larger batches measured no faster per restart on 2 cores
CPU_BUDGET = 1 << 30  # bytes one CPU worker may spend on a batch
CUDA_MOST = 8192
CUDA_SHARE = 0.7  # of the free GPU memory a batch may take
PROBE = 4  # restarts the CUDA probe runs


def model_fingerprint(model: torch.nn.Module) -> str:
    """The model's class and the bytes of its weights and buffers: equal fingerprints, the same function."""
    digest = hashlib.sha1(type(model).__name__.encode())
    for name, tensor in [*model.named_parameters(), *model.named_buffers()]:
        digest.update(name.encode())
        digest.update(str(tuple(tensor.shape)).encode())
        digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()


def batch_key(obs: Observation, fingerprints: dict[int, str]) -> Hashable:
    """Observations with equal keys run in one batch (``fingerprints`` caches a model's by its id)."""
    if id(obs.model) not in fingerprints:
        fingerprints[id(obs.model)] = model_fingerprint(obs.model)
    return (
        fingerprints[id(obs.model)],
        obs.gradients is None,
        obs.masks is None,
        obs.input_shape,
        obs.num_classes,
        obs.batch_size,
        obs.clients,
        obs.local,
    )


def restart_bytes(obs: Observation, cfg: AttackConfig, itemsize: int = 4) -> int:
    """A rough memory cost of one restart: the L-BFGS history and a dozen model-sized tensors (per-restart
    gradients, their graph for the second derivative, the distance's terms)."""
    params = sum(p.numel() for p in obs.model.parameters())
    variables = obs.images * (math.prod(obs.input_shape) + obs.num_classes)
    state = BatchedLBFGS.history_bytes(variables, itemsize=itemsize) if cfg.optimizer == "lbfgs" else 0
    return state + 12 * params * itemsize


def cpu_cap(obs: Observation, cfg: AttackConfig) -> int:
    """Restarts per CPU batch: at most :data:`CPU_MOST`, within :data:`CPU_BUDGET`."""
    return max(1, min(CPU_MOST, CPU_BUDGET // max(restart_bytes(obs, cfg), 1)))


def cuda_cap(observations: Sequence[Observation], cfg: AttackConfig, seeds: Sequence[int]) -> int:
    """Restarts per CUDA batch, from a probe: one step of :data:`PROBE` restarts, its peak memory per restart,
    against :data:`CUDA_SHARE` of the memory free."""
    device = observations[0].gradients[0].device if observations[0].gradients is not None else None
    if device is None or device.type != "cuda":
        return CUDA_MOST
    torch.cuda.synchronize(device)
    torch.cuda.reset_peak_memory_stats(device)
    before = torch.cuda.memory_allocated(device)
    n = min(PROBE, len(observations))
    reconstruct(list(observations[:n]), replace(cfg, steps=1), list(seeds[:n]))
    torch.cuda.synchronize(device)
    per_restart = max((torch.cuda.max_memory_allocated(device) - before) / n, 1.0)
    free, _ = torch.cuda.mem_get_info(device)
    return max(1, min(CUDA_MOST, int(CUDA_SHARE * free / per_restart)))


def chunks(count: int, cap: int, split: int) -> list[range]:
    """Split ``count`` restarts into batches of at most ``cap``, into at least ``split`` batches when there are that
    many restarts (so that ``split`` workers all have one)."""
    size = max(1, min(cap, math.ceil(count / max(split, 1))))
    return [range(i, min(i + size, count)) for i in range(0, count, size)]
