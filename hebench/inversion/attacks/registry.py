"""The attacks' registry: each attack module registers its ``reconstruct`` under the optimizer name its recipe
gives (``optimizer: lbfgs``), and :func:`reconstruct` looks it up (no dispatch by name anywhere else)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from hebench.errors import ParameterError
from hebench.inversion.attacks.config import AttackConfig
from hebench.inversion.attacks.reconstruction import Reconstruction
from hebench.inversion.views.observation import Observation

# ``reconstruct(observations, cfg, seeds)``: one restart per (observation, seed) pair, the observations sharing
# one model (a batch may hold several images' restarts); results in the same order
Reconstruct = Callable[[Sequence[Observation], AttackConfig, Sequence[int]], list[Reconstruction]]
ATTACKS: dict[str, Reconstruct] = {}


def register(optimizer: str) -> Callable[[Reconstruct], Reconstruct]:
    """Register an attack's ``reconstruct`` under the ``optimizer`` name its recipes give."""

    def add(fn: Reconstruct) -> Reconstruct:
        ATTACKS[optimizer] = fn
        return fn

    return add


def reconstruct(observations: Sequence[Observation], cfg: AttackConfig, seeds: Sequence[int]) -> list[Reconstruction]:
    """One restart per ``(observation, seed)``; each result carries its wall and CPU time (a batch's, shared)."""
    if len(observations) != len(seeds):
        raise ParameterError(f"{len(observations)} observations for {len(seeds)} seeds", "give one seed per restart")
    try:
        attack = ATTACKS[cfg.optimizer]
    except KeyError:
        raise ParameterError(
            f"optimizer '{cfg.optimizer}' is not an attack hebench has", f"use one of {', '.join(sorted(ATTACKS))}"
        ) from None
    start, cpu = time.perf_counter(), time.process_time()
    out = attack(observations, cfg, seeds)
    wall, used = time.perf_counter() - start, time.process_time() - cpu
    for rec in out:
        if not rec.wall_s:  # a serial attack timed each restart itself
            rec.wall_s, rec.cpu_s = wall / len(out), used / len(out)
    return out


def one_by_one(
    attack: Callable[[Observation, AttackConfig, int], Reconstruction],
    observations: Sequence[Observation],
    cfg: AttackConfig,
    seeds: Sequence[int],
) -> list[Reconstruction]:
    """The serial engine: each restart on its own, timed on its own."""
    out = []
    for obs, seed in zip(observations, seeds, strict=True):
        start, cpu = time.perf_counter(), time.process_time()
        rec = attack(obs, cfg, seed)
        rec.wall_s, rec.cpu_s = time.perf_counter() - start, time.process_time() - cpu
        out.append(rec)
    return out


def reconstruct_one(obs: Observation, cfg: AttackConfig, seed: int) -> Reconstruction:
    """One restart of one observation."""
    return reconstruct([obs], cfg, [seed])[0]
