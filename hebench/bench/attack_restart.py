"""Gradient-inversion speed: seconds per attack restart on this machine (and on its GPU when present).

DLG (L-BFGS) against DLG's RGB LeNet on one natural-image patch, with early
stopping switched off so every restart does the same work; the serial engine on
one torch thread, then ``workers`` restarts at once in worker processes
(throughput), then the batched engine (all the restarts in batches, in the same
worker processes), then the batched engine on CUDA where available. Inverting
Gradients on ResNet-18 gives a per-step time. Wall and CPU seconds are both given:
on a shared machine the CPU figure is the one that does not depend on what else
runs. ``attack_batched`` compares the engines interleaved, for ratios.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

import torch

from hebench.bench.registry import study
from hebench.data.natural import CLASSES, load_natural_tensors
from hebench.inversion.attacks import reconstruct_one as reconstruct
from hebench.inversion.evaluate import init_model
from hebench.inversion.parallel import RestartPool, default_workers
from hebench.inversion.recipes import load_recipe
from hebench.inversion.views.observation import Observation, observe, victim_gradients

SHAPE = (3, 32, 32)


def _observation(model_name: str) -> Observation:
    x, y = load_natural_tensors()
    model = init_model(model_name, SHAPE, CLASSES, seed=0)
    return observe(model, victim_gradients(model, x[:1], y[:1]), "raw", None, SHAPE, CLASSES, 1)


@study("attack_restart")
def attack_restart(steps: int = 30, restarts: int = 4, workers: int | None = None) -> dict[str, Any]:
    """Seconds per gradient-inversion restart (DLG, L-BFGS): serial engine, its worker pool, the batched engine.

    Wall seconds per DLG restart of ``steps`` L-BFGS steps (each up to 20 evaluations); CUDA where present."""
    cfg = replace(load_recipe("dlg"), steps=steps, patience=steps + 1, tolerance=0.0, engine="serial")
    obs = _observation("lenet")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        reconstruct(obs, replace(cfg, steps=2), 0)  # warm-up, not measured
        serial = [reconstruct(obs, cfg, seed) for seed in range(restarts)]
    finally:
        torch.set_num_threads(threads)
    rows: list[dict[str, Any]] = [
        {
            "setting": "cpu, 1 thread, serial",
            "device": "cpu",
            "workers": 1,
            "s_per_restart": sum(r.wall_s for r in serial) / len(serial),
            "cpu_s_per_restart": sum(r.cpu_s for r in serial) / len(serial),
        }
    ]
    n_workers = workers or default_workers()
    with RestartPool(n_workers, "cpu") as pool:
        list(pool.map([(obs, replace(cfg, steps=2), 0)] * n_workers))  # start the workers, not measured
        start = time.perf_counter()
        done = list(pool.map([(obs, cfg, seed) for seed in range(restarts * n_workers)]))
        elapsed = time.perf_counter() - start
    walls = [r.wall_s for r in done]
    rows.append(
        {
            "setting": f"cpu, {n_workers} worker processes",
            "device": "cpu",
            "workers": n_workers,
            "s_per_restart": sum(walls) / len(walls),
            "throughput_s_per_restart": elapsed / len(walls),
            "cpu_s_per_restart": sum(r.cpu_s for r in done) / len(done),
        }
    )
    batched = replace(cfg, engine="batched")
    with RestartPool(n_workers, "cpu") as pool:
        list(pool.map([(obs, replace(batched, steps=2), 0)] * n_workers))  # start the workers, not measured
        start = time.perf_counter()
        done = list(pool.map([(obs, batched, seed) for seed in range(restarts * n_workers)]))
        elapsed = time.perf_counter() - start
    rows.append(
        {
            "setting": f"cpu, batched, {n_workers} worker processes",
            "device": "cpu",
            "workers": n_workers,
            "batch": max(r.batch for r in done),
            "s_per_restart": sum(r.wall_s for r in done) / len(done),  # a batch's wall over its restarts
            "throughput_s_per_restart": elapsed / len(done),
            "cpu_s_per_restart": sum(r.cpu_s for r in done) / len(done),
        }
    )
    if torch.cuda.is_available():
        with RestartPool(1, "cuda") as pool:
            list(pool.map([(obs, replace(batched, steps=2), 0)] * 2))  # warm-up, not measured
            start = time.perf_counter()
            done = list(pool.map([(obs, batched, seed) for seed in range(restarts * 64)]))
            elapsed = time.perf_counter() - start
        rows.append(
            {
                "setting": "cuda, batched",
                "device": torch.cuda.get_device_name(),
                "workers": 1,
                "batch": max(r.batch for r in done),
                "s_per_restart": sum(r.wall_s for r in done) / len(done),
                "throughput_s_per_restart": elapsed / len(done),
            }
        )
    ig = replace(load_recipe("inverting-gradients"), steps=3)
    big = _observation("resnet18")
    start = time.perf_counter()
    reconstruct(big, replace(ig, engine="serial"), 0)
    return {
        "benchmark": "attack_restart",
        "attack": "dlg",
        "model": "lenet (3x32x32, 100 classes)",
        "steps_per_restart": steps,
        "full_restart_steps": load_recipe("dlg").steps,
        "rows": rows,
        "inverting_gradients_resnet18_s_per_step": (time.perf_counter() - start) / ig.steps,
    }
