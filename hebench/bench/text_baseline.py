"""The text optimisation baseline's two engines (#39): seconds per Adam step for R restarts, every restart's
objective evaluated one after another (``serial``) against all restarts in one vmapped pass (``batched``).

Both run the whole attack (:func:`hebench.inversion.text.baseline.optimisation_attack`) on one raw single-step
gradient of the tiny decoder (2 layers, width 128, a 64-token vocabulary), B sequences of L tokens, the same seed
and device; the engines alternate round by round so that load from other work hits both, the ratio
serial / batched is taken per round (its median reported) with the load average beside each round. Each row also
says how far the two engines' per-restart losses are apart after the same steps (float rounding only)."""

from __future__ import annotations

import os
import statistics
import time
from typing import Any

import torch

from hebench.bench.registry import Option, count, ints, study
from hebench.errors import ParameterError

VOCAB = 64


def _device(text: str) -> str:
    if text not in ("auto", "cpu", "cuda"):
        raise ParameterError(f"'{text}' is not a device", "write auto, cpu or cuda")
    return text


def _observation(batch: int, length: int) -> Any:
    import hebench.models.language  # noqa: F401  (hides a broken torchvision before transformers loads)
    from hebench.inversion.text.views import TextClient, TextTraining, raw_view
    from hebench.models.language.decoder import build_decoder, decoder_shape

    model = build_decoder(decoder_shape("gpt2_tiny"), VOCAB, 0, seed=0)
    blocks = torch.randint(0, VOCAB, (batch, length), generator=torch.Generator().manual_seed(0))
    return raw_view(model, TextClient(blocks), TextTraining(upload="gradient", batch_size=batch))


def _row(obs: Any, restarts: int, steps: int, rounds: int, device: str) -> dict[str, Any]:
    """Both engines on ``obs`` with ``restarts`` restarts, ``rounds`` times, alternating which goes first."""
    from hebench.inversion.text.baseline import BaselineConfig, optimisation_attack

    per: dict[str, list[float]] = {"serial": [], "batched": []}
    losses: dict[str, list[float]] = {}
    loads = []
    for k in range(rounds):
        for engine in ("serial", "batched") if k % 2 == 0 else ("batched", "serial"):
            cfg = BaselineConfig(restarts=restarts, steps=steps, engine=engine, device=device)  # type: ignore[arg-type]
            diag = optimisation_attack(obs, cfg).diagnostics
            per[engine].append(diag["seconds_per_step"])
            losses.setdefault(engine, diag["restart_losses"])
        loads.append(os.getloadavg()[0])
    ratios = [s / b for s, b in zip(per["serial"], per["batched"], strict=True)]
    pairs = zip(losses["serial"], losses["batched"], strict=True)
    return {
        "restarts": restarts,
        "serial_s_per_step": per["serial"],
        "batched_s_per_step": per["batched"],
        "serial_over_batched": ratios,
        "median_ratio": statistics.median(ratios),
        "loadavg_1min_per_round": loads,
        "max_relative_loss_difference": max(abs(a - b) / max(abs(a), 1e-12) for a, b in pairs),
    }


@study(
    "text_baseline",
    options=(
        Option("--text-baseline-restarts", "restarts", "restart counts R (default 1,4,16)", ints),
        Option("--text-baseline-steps", "steps", "Adam steps timed per run (default 10)", count),
        Option("--text-baseline-rounds", "rounds", "rounds, engines alternating which goes first (default 4)", count),
        Option("--text-baseline-batch", "batch", "victim sequences B (default 2)", count),
        Option("--text-baseline-length", "length", "tokens per sequence L (default 16)", count),
        Option("--text-baseline-threads", "threads", "torch threads on the CPU (default 1)", count),
        Option("--text-baseline-device", "device", "auto (CUDA when present), cpu or cuda", _device),
    ),
)
def text_baseline(
    restarts: tuple[int, ...] = (1, 4, 16),
    steps: int = 10,
    rounds: int = 4,
    batch: int = 2,
    length: int = 16,
    threads: int = 1,
    device: str = "auto",
) -> dict[str, Any]:
    """The text optimisation baseline: serial against batched (vmapped) restarts, seconds per step, tiny decoder."""
    from hebench.inversion.devices import resolve_device
    from hebench.inversion.text.baseline import BaselineConfig, optimisation_attack

    dev = resolve_device(device)
    before_threads = torch.get_num_threads()
    torch.set_num_threads(threads)
    started, load_before = time.perf_counter(), os.getloadavg()
    try:
        obs = _observation(batch, length)
        for engine in ("serial", "batched"):  # warm-up (allocator, first vmap), not timed
            optimisation_attack(obs, BaselineConfig(restarts=2, steps=1, engine=engine, device=dev))
        rows = [_row(obs, r, steps, rounds, dev) for r in restarts]
    finally:
        torch.set_num_threads(before_threads)
    return {
        "model": f"gpt2_tiny (2 layers, width 128), {VOCAB}-token vocabulary, randomly initialised",
        "victim": f"raw single-step gradient of {batch} x {length} tokens",
        "steps_timed": steps,
        "rounds": rounds,
        "device": dev,
        "gpu": torch.cuda.get_device_name() if dev == "cuda" else None,
        "threads": threads,
        "wall_s": time.perf_counter() - started,
        "loadavg_before": list(load_before),
        "loadavg_after": list(os.getloadavg()),
        "rows": rows,
    }
