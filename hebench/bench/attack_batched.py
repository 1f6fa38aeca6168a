"""The batched attack engine against the serial one it replaces (issue #37): strength, CPU speed, GPU speed.

- **Strength**, on the ``attack_strength`` plans (Inverting Gradients at the recipe's settings, natural 32x32
  patches, DLG's RGB LeNet, one gradient, batch 1 and 4) and on DLG cells of the privacy suite (raw, and
  10 % random encryption against the mask-aware attacker): each plan run by both engines, same restarts, steps
  and seeds; success rates with Wilson intervals and their difference with Newcombe's, mean SSIM with a
  t-interval and the SSIM difference paired by image. The engines start every restart at the same point and
  run the same algorithm, so they differ only where float rounding (``vmap``'s kernels against single-sample
  ones) is amplified by the optimiser: DLG's L-BFGS without a line search is chaotic at rounding level.
- **CPU speed**: restarts per second of one DLG plan with fixed work per restart (early stopping off), the
  serial engine in hebench's worker pool as it was (one process per core, default allocator) against the
  batched engine in its pool, interleaved round by round so that contention from other work hits both; the
  ratio is taken per round, the load average beside each.
- **GPU speed** where CUDA is present: the batched engine's restarts per second on the GPU against one CPU
  thread's serial restarts, same plan; otherwise the row says "not measured: no GPU".
"""

from __future__ import annotations

import math
import os
import statistics
import time
from dataclasses import asdict, dataclass, replace
from typing import Any

import psutil
import torch
from scipy import stats

from hebench.analysis.success import SUCCESS_SSIM, newcombe, wilson
from hebench.bench.registry import Option, count, study, words
from hebench.config import DataSpec, SelectiveSpec
from hebench.errors import ParameterError
from hebench.inversion.evaluate import AttackPlan, run_plan
from hebench.inversion.parallel import RestartPool, default_workers
from hebench.inversion.recipes import load_recipe

NATURAL = DataSpec(dataset="natural", clients=1)


@dataclass(frozen=True)
class BatchedSize:
    ig_steps: int = 1000  # attack_strength's default
    ig_single_images: int = 8
    ig_batches_of_4: int = 2
    dlg_images: int = 8  # DLG cells: victims per cell
    dlg_restarts: int = 2  # privacy.yaml's best of 2
    dlg_steps: int = 300  # DLG's recipe
    speed_restarts: int = 64  # restarts per speed round (one plan)
    speed_steps: int = 5  # L-BFGS steps per restart in the speed rounds (up to 20 evaluations each)
    speed_rounds: int = 3
    gpu_restarts: int = 1024


# ``--batched-quick``: minutes rather than an hour on two shared cores (fewer IG steps and victims, same speed rounds)
QUICK = BatchedSize(ig_steps=200, ig_single_images=4, ig_batches_of_4=1, dlg_images=4)
PARTS = ("strength", "cpu", "gpu")


def _strength_plans(size: BatchedSize) -> dict[str, AttackPlan]:
    ig = AttackPlan(attack="inverting-gradients", data=NATURAL, seeds=1, restarts=1, steps=size.ig_steps)
    dlg = AttackPlan(data=NATURAL, images=size.dlg_images, seeds=1, restarts=size.dlg_restarts, steps=size.dlg_steps)
    return {
        "inverting-gradients, batch 1 (attack_strength)": replace(ig, images=size.ig_single_images),
        "inverting-gradients, batch 4 (attack_strength)": replace(ig, batch_size=4, images=size.ig_batches_of_4),
        "dlg, raw (privacy suite cell)": dlg,
        "dlg, random 10 %, mask-aware (privacy suite cell)": replace(
            dlg, view="selective", selective=SelectiveSpec(mask="random", ratio=0.1)
        ),
    }


def _mean_interval(values: list[float]) -> dict[str, float]:
    n = len(values)
    mean = statistics.fmean(values)
    half = stats.t.ppf(0.975, n - 1) * statistics.stdev(values) / math.sqrt(n) if n > 1 else math.inf
    return {"mean": mean, "low": mean - half, "high": mean + half, "n": n}


def _scores(records: list[dict[str, Any]], threshold: float) -> dict[str, Any]:
    ssims = [s for r in records for s in r["ssim_per_image"]]
    k = sum(s >= threshold for s in ssims)
    low, high = wilson(k, len(ssims))
    return {
        "ssim_per_image": [round(s, 4) for s in ssims],
        "success": {"k": k, "n": len(ssims), "low": low, "high": high},
        "mean_ssim": _mean_interval(ssims),
        "grad_loss": [r["grad_loss"] for r in records],
    }


def _compare(serial: dict[str, Any], batched: dict[str, Any]) -> dict[str, Any]:
    s, b = serial["success"], batched["success"]
    low, high = newcombe(b["k"], b["n"], s["k"], s["n"])
    paired = [x - y for x, y in zip(batched["ssim_per_image"], serial["ssim_per_image"], strict=True)]
    within = bool(b["k"] >= s["k"] or low <= 0 <= high)  # numpy's bool is not JSON
    ssim_ok = bool(batched["mean_ssim"]["mean"] >= serial["mean_ssim"]["low"])
    if b["k"] == s["k"] and max(abs(d) for d in paired) < 1e-3:
        verdict = "the same reconstructions (to 1e-3 SSIM per image)"
    elif within and ssim_ok:
        verdict = (
            "not lower: success within Newcombe's 95 % interval of 0 or above, mean SSIM not below serial's interval"
        )
    else:
        verdict = "LOWER than the serial engine"
    return {
        "success_difference": {"batched_minus_serial": b["k"] / b["n"] - s["k"] / s["n"], "low": low, "high": high},
        "ssim_difference_paired": _mean_interval(paired),
        "images_differing": sum(abs(d) >= 1e-3 for d in paired),
        "strength_not_lower": within and ssim_ok,
        "verdict": verdict,
    }


def _strength(size: BatchedSize, workers: int | None, device: str) -> list[dict[str, Any]]:
    rows = []
    for name, plan in _strength_plans(size).items():
        row: dict[str, Any] = {"plan": name, "restarts": plan.restarts, "steps": plan.steps}
        for engine in ("serial", "batched"):  # interleaved plan by plan
            start = time.perf_counter()
            records = run_plan(replace(plan, engine=engine, workers=workers, device=device, label=name))
            row[engine] = {**_scores(records, SUCCESS_SSIM), "wall_s": time.perf_counter() - start}
        row.update(_compare(row["serial"], row["batched"]))
        rows.append(row)
    return rows


def _speed_plan(size: BatchedSize, restarts: int) -> tuple[AttackPlan, str]:
    """DLG on one natural patch with fixed work per restart (no early stopping), as a recipe file."""
    import tempfile
    from pathlib import Path

    import yaml

    cfg = load_recipe("dlg")
    recipe = {**asdict(cfg), "steps": size.speed_steps, "patience": size.speed_steps + 1, "tolerance": 0.0}
    recipe.pop("imprint")
    path = Path(tempfile.mkdtemp(prefix="hebench-speed-")) / "dlg-fixed-work.yaml"
    path.write_text(yaml.safe_dump(recipe))
    plan = AttackPlan(attack=str(path), data=NATURAL, images=1, seeds=1, restarts=restarts, label="speed")
    return plan, str(path)


def _timed(plan: AttackPlan, pool: RestartPool) -> float:
    start = time.perf_counter()
    run_plan(plan, pool=pool)
    return time.perf_counter() - start


def _pool_cpu_s(pool: RestartPool) -> float:
    """User + system CPU seconds spent so far where ``pool`` runs restarts: its worker processes (psutil), or this
    process when it runs them itself. On a shared machine this, unlike wall time, does not depend on the load."""
    workers = pool._pool._processes if pool._pool is not None else None
    if not workers:
        return time.process_time()
    return sum(sum(psutil.Process(pid).cpu_times()[:2]) for pid in workers)


def _measured(plan: AttackPlan, pool: RestartPool) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one run of ``plan`` in ``pool``."""
    cpu = _pool_cpu_s(pool)
    wall = _timed(plan, pool)
    return wall, _pool_cpu_s(pool) - cpu


def _cpu_speed(size: BatchedSize, workers: int) -> dict[str, Any]:
    plan, recipe = _speed_plan(size, size.speed_restarts)
    rounds = []
    with RestartPool(workers, "cpu", keep_memory=False) as today, RestartPool(workers, "cpu") as batched:
        warm = replace(plan, restarts=workers)
        _timed(replace(warm, engine="serial"), today)  # start the workers, not measured
        _timed(replace(warm, engine="batched"), batched)
        for _ in range(size.speed_rounds):
            load = os.getloadavg()
            serial_s, serial_cpu = _measured(replace(plan, engine="serial"), today)
            batched_s, batched_cpu = _measured(replace(plan, engine="batched"), batched)
            rounds.append(
                {
                    "load_avg_before": [round(v, 2) for v in load],
                    "serial_pool_restarts_per_s": plan.restarts / serial_s,
                    "batched_restarts_per_s": plan.restarts / batched_s,
                    "ratio": serial_s / batched_s,
                    "serial_cpu_s_per_restart": serial_cpu / plan.restarts,
                    "batched_cpu_s_per_restart": batched_cpu / plan.restarts,
                    "cpu_ratio": serial_cpu / batched_cpu if batched_cpu > 0 else None,
                    "load_avg_after": [round(v, 2) for v in os.getloadavg()],
                }
            )
    ratios = [r["ratio"] for r in rounds]
    cpu_ratios = [r["cpu_ratio"] for r in rounds if r["cpu_ratio"] is not None]
    return {
        "plan": f"dlg on one natural patch, RGB LeNet, {size.speed_steps} L-BFGS steps per restart, no early stop",
        "recipe": recipe,
        "restarts_per_round": plan.restarts,
        "workers": workers,
        "cores": default_workers(),
        "rounds": rounds,
        "ratio_median": statistics.median(ratios),
        "ratio_min": min(ratios),
        "cpu_ratio_median": statistics.median(cpu_ratios) if cpu_ratios else None,
        "goal": ">= 3x today's worker pool (restarts per wall second; per CPU second beside it)",
        "meets_goal": statistics.median(ratios) >= 3,
        "meets_goal_per_cpu_s": bool(cpu_ratios) and statistics.median(cpu_ratios) >= 3,
    }


def _gpu_speed(size: BatchedSize) -> dict[str, Any]:
    if not torch.cuda.is_available():
        return {"measured": False, "reason": "not measured: no GPU"}
    plan, _ = _speed_plan(size, size.gpu_restarts)
    with RestartPool(1, "cpu") as cpu:
        one = replace(plan, restarts=4, engine="serial", workers=1)
        _timed(replace(one, restarts=1), cpu)
        serial_per_s = one.restarts / _timed(one, cpu)
    with RestartPool(1, "cuda") as gpu:
        _timed(replace(plan, restarts=8, engine="batched", device="cuda"), gpu)  # warm-up, not measured
        gpu_s = _timed(replace(plan, engine="batched", device="cuda"), gpu)
        largest = gpu.stats.largest
    gpu_per_s = plan.restarts / gpu_s
    return {
        "measured": True,
        "device": torch.cuda.get_device_name(),
        "restarts": plan.restarts,
        "largest_batch": largest,
        "gpu_restarts_per_s": gpu_per_s,
        "cpu_one_thread_serial_restarts_per_s": serial_per_s,
        "ratio": gpu_per_s / serial_per_s,
        "goal": ">= 100x one CPU thread's serial",
        "meets_goal": gpu_per_s / serial_per_s >= 100,
    }


def _parts(text: str) -> tuple[str, ...]:
    parts = words(text)
    unknown = sorted(set(parts) - set(PARTS))
    if unknown:
        raise ParameterError(f"attack_batched has no part '{unknown[0]}'", f"name some of {', '.join(PARTS)}")
    return parts


@study(
    "attack_batched",
    options=(
        Option("--batched-parts", "parts", "which parts: strength,cpu,gpu (default: all)", _parts),
        Option("--batched-quick", "quick", "a short run: 200 IG steps, 4 DLG victims (speed rounds unchanged)"),
        Option("--batched-rounds", "speed_rounds", "interleaved CPU speed rounds (default 3)", count),
        Option("--batched-restarts", "speed_restarts", "restarts per CPU speed round (default 64)", count),
        Option("--batched-gpu-restarts", "gpu_restarts", "restarts in the GPU speed run (default 1024)", count),
    ),
)
def attack_batched(
    size: BatchedSize | None = None,
    workers: int | None = None,
    parts: tuple[str, ...] = PARTS,
    quick: bool = False,
    speed_rounds: int | None = None,
    speed_restarts: int | None = None,
    gpu_restarts: int | None = None,
) -> dict[str, Any]:
    """The batched attack engine against the serial one (#37): strength on the same plans, CPU restarts/s, GPU.

    ``strength`` rows, ``cpu`` speed rounds (interleaved, the load beside each), ``gpu`` speed (or why not)."""
    size = size or (QUICK if quick else BatchedSize())
    if speed_rounds is not None:
        size = replace(size, speed_rounds=speed_rounds)
    if speed_restarts is not None:
        size = replace(size, speed_restarts=speed_restarts)
    if gpu_restarts is not None:
        size = replace(size, gpu_restarts=gpu_restarts)
    workers = workers or default_workers()
    start = time.perf_counter()
    out: dict[str, Any] = {"benchmark": "attack_batched", "size": asdict(size), "workers": workers}
    if "strength" in parts:
        out["strength"] = _strength(size, workers, "cpu")
        out["strength_not_lower"] = all(r["strength_not_lower"] for r in out["strength"])
    if "cpu" in parts:
        out["cpu_speed"] = _cpu_speed(size, workers)
    if "gpu" in parts:
        out["gpu_speed"] = _gpu_speed(size)
    out["wall_s"] = time.perf_counter() - start
    return out
