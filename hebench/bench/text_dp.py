"""What client-level DP's ε stops the exact span attack (issue #39): ``suites/text-leakage.yaml``'s tiny decoder,
LoRA (as written) and full fine-tuning, per noise multiplier z and victim batch size.

Per z: the ε one round of client-level DP spends at the suite's δ (hebench's own accountant,
:class:`~hebench.protections.dp.client_account.ClientLevelAccount`), and over the suite's rounds and a longer run,
and per fine-tuning and batch size the span attack on the raw view with DP (the victim's upload privatized by
:func:`~hebench.protections.dp.mechanism.privatize_update` with secret noise, as a run's client sends it): outcome
counts and the first typed reason, exact-sequence rate with its Wilson interval, ROUGE-1, token precision and
recall, the first span's spectrum gap, and the relative noise (the drawn noise's norm over the clipped update's
norm). In the same run: the no-DP baseline (the raw view), and z = 0 (clipping and the float32 path, no noise).
The thresholds per fine-tuning and batch size are read from those rows (:func:`thresholds`).
"""

from __future__ import annotations

import copy
import math
import os
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
import yaml

from hebench.bench.registry import Option, count, ints, number, study
from hebench.config import DPSpec, parse_suite
from hebench.config.catalog import shipped_suite
from hebench.errors import ParameterError
from hebench.protections.dp.client_account import ClientLevelAccount
from hebench.protections.dp.noise import NoiseSource, SecretNoise

SUITE = "text-leakage"
NOISES = (0.0, 1e-10, 1e-9, 3e-9, 1e-8, 3e-8, 1e-7, 1e-6, 1e-4, 1e-2, 1.0)
LONG_RUN = 100  # rounds of a longer run, for the ε it would spend
TOKENS_RECALL = 0.9  # "tokens recovered" (order aside): token recall at least this,
TOKENS_PRECISION = 0.5  # with at least every other claimed token right (tokens by position come with extra candidates)
CAVEAT = (
    "The span attack cuts the span at a spectrum gap of 10x: noise far below any meaningful privacy level removes "
    "that gap, so a failure at an astronomically large epsilon says the attack's gap test is fragile, not that DP "
    "guarantees anything there; an epsilon in the thousands or above bounds nothing. The threshold is this attack's, "
    "not DP's: a noise-aware attack (e.g. reading the rank from the protocol's batch bound) may go further."
)


def noises(text: str) -> tuple[float, ...]:
    """``"0,1e-6,0.01"`` -> ``(0.0, 1e-06, 0.01)``: comma-separated noise multipliers, each finite and >= 0."""
    try:
        values = tuple(float(part) for part in text.split(",") if part.strip())
    except ValueError:
        values = ()
    if not values or any(not math.isfinite(v) or v < 0 for v in values):
        raise ParameterError(f"'{text}' is not a list of noise multipliers >= 0", "write e.g. 0,1e-6,1e-3,1")
    return tuple(sorted(set(values)))


def epsilon(spec: DPSpec, rounds: int) -> float | None:
    """ε at ``spec.delta`` after ``rounds`` client-level releases at ``spec.noise_multiplier`` (hebench's accountant;
    None at z = 0: no finite guarantee)."""
    account = ClientLevelAccount(spec)
    account.account(rounds)
    return account.epsilon()


class MeasuredNoise:
    """A :class:`NoiseSource` that draws from ``inner`` and keeps the L2 norm of the last draw."""

    def __init__(self, inner: NoiseSource) -> None:
        self.inner = inner
        self.norm = 0.0

    def gaussian(self, std: float, shape: tuple[int, ...]) -> np.ndarray:
        drawn = self.inner.gaussian(std, shape)
        self.norm = float(np.linalg.norm(drawn))
        return drawn


def recovers_text(row: dict[str, Any]) -> bool:
    """At least one of the victim's sequences came back exactly."""
    return bool(row["exact"])


def recovers_tokens(row: dict[str, Any]) -> bool:
    """The victim's tokens came back (order aside): recall at least :data:`TOKENS_RECALL`, precision at least
    :data:`TOKENS_PRECISION`."""
    return (row["token_recall"] or 0.0) >= TOKENS_RECALL and (row["token_precision"] or 0.0) >= TOKENS_PRECISION


def _eps(row: dict[str, Any]) -> float:
    """A row's ε per round, ∞ where DP gives no finite guarantee (z = 0)."""
    value = row["epsilon_per_round"]
    return math.inf if value is None else float(value)


def _finite(value: float | None) -> float | str | None:
    """``value`` for JSON: ``"infinite"`` for z = 0's ε (no finite guarantee)."""
    return "infinite" if value == math.inf else value


def threshold(rows: Sequence[dict[str, Any]], success: Any = recovers_text) -> dict[str, Any]:
    """Where DP starts to stop the attack, from one fine-tuning's and batch size's DP rows (z >= 0, no baseline).

    ``smallest_epsilon_recovering``: the ε of the most private setting at which ``success`` still held;
    ``largest_epsilon_failing``: the least private one at which it did not (None where there is none);
    ``stops_below_epsilon``: every ε at or below this failed (the z >= ``stops_from_z`` rows), None if the
    strongest noise still let it through; ``monotone``: every success lies at a larger ε than every failure."""
    ordered = sorted(rows, key=lambda r: r["noise_multiplier"])
    won = [r for r in ordered if success(r)]
    lost = [r for r in ordered if not success(r)]
    tail = []  # the failing rows at the strongest noise, up to the first success
    for row in reversed(ordered):
        if success(row):
            break
        tail.append(row)
    stop = tail[-1] if tail else None
    return {
        "smallest_epsilon_recovering": _finite(min((_eps(r) for r in won), default=None)),
        "z_recovering_up_to": max((r["noise_multiplier"] for r in won), default=None),
        "largest_epsilon_failing": _finite(max((_eps(r) for r in lost), default=None)),
        "z_failing_from": min((r["noise_multiplier"] for r in lost), default=None),
        "stops_from_z": None if stop is None else stop["noise_multiplier"],
        "stops_below_epsilon": None if stop is None else _finite(_eps(stop)),
        "monotone": not won or not lost or min(_eps(r) for r in won) > max(_eps(r) for r in lost),
    }


def thresholds(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per fine-tuning and batch size: whether the no-DP baseline recovers, and :func:`threshold` for exact text
    and for tokens (order aside)."""
    out = []
    keys = dict.fromkeys((r["fine_tuning"], r["batch_size"]) for r in rows)
    for fine_tuning, batch in keys:
        cell = [r for r in rows if (r["fine_tuning"], r["batch_size"]) == (fine_tuning, batch)]
        base = [r for r in cell if not r["dp"]]
        dp = [r for r in cell if r["dp"]]
        out.append(
            {
                "fine_tuning": fine_tuning,
                "batch_size": batch,
                "baseline_recovers_text": bool(base) and recovers_text(base[0]),
                "text": threshold(dp, recovers_text),
                "tokens": threshold(dp, recovers_tokens),
            }
        )
    return out


def _variant(raw: dict[str, Any], fine_tuning: str) -> dict[str, Any]:
    """The suite with one raw configuration, fine-tuned as written (``lora``) or fully (``full``)."""
    out = copy.deepcopy(raw)
    out["configurations"] = [{"mode": "raw"}]
    if fine_tuning == "full":
        out["model"]["fine_tuning"] = {"kind": "full"}
    return out


def suite_dp(raw: dict[str, Any]) -> DPSpec:
    """The suite's client-level DP configuration's spec (its δ and accountant are the study's)."""
    for config in parse_suite(raw, SUITE).configurations:
        if config.dp is not None and config.dp.level == "client":
            return config.dp
    raise ParameterError(f"{SUITE} has no client-level DP configuration", "add one (dp: {level: client, ...})")


def _update_norm(model: torch.nn.Module, client: Any, training: Any) -> float:
    """The L2 norm of the victim's trained-minus-global update as its client computes it (float32)."""
    from hebench.inversion.text.views import client_upload
    from hebench.models.shared import shared_tensors

    sent = client_upload(model, client, training)
    start = dict(shared_tensors(model))
    flat = [(sent[n].detach().float() - start[n].detach().float()).reshape(-1) for n in sent]
    return float(torch.cat(flat).double().norm())


def _norms(model: torch.nn.Module, suite: Any, blocks: Sequence[torch.Tensor], batch: int, trials: int) -> list[float]:
    """The victim's update norm for each of ``trials`` batches (before clipping)."""
    from hebench.inversion.text.campaign import training_of, victims

    per_round = suite.training.clients_per_round or len(blocks)
    training = training_of(suite, batch)
    return [_update_norm(model, victims(blocks, batch, i, per_round).clients[0], training) for i in range(trials)]


def _cell(
    model: torch.nn.Module,
    suite: Any,
    blocks: Sequence[torch.Tensor],
    batch: int,
    trials: int,
    dp: DPSpec | None,
    norms: list[float],
) -> dict[str, Any]:
    """The span attack on ``trials`` victim batches' raw view (with ``dp``: privatized), pooled."""
    from hebench.inversion.scoring.text import pool, score_reconstruction
    from hebench.inversion.text.campaign import training_of, victims
    from hebench.inversion.text.span_attack import span_attack
    from hebench.inversion.text.views import raw_view

    training = training_of(suite, batch)
    per_round = suite.training.clients_per_round or len(blocks)
    scores, outcomes, reason, why, gaps, relative, noise_norms, seconds = [], {}, None, "", [], [], [], 0.0
    for index in range(trials):
        victim = victims(blocks, batch, index, per_round).clients[0]
        noise = MeasuredNoise(SecretNoise())
        started = time.perf_counter()
        result = span_attack(raw_view(model, victim, training, dp, noise if dp is not None else None))
        seconds += time.perf_counter() - started
        scores.append(score_reconstruction(victim.blocks.tolist(), result))
        outcomes[result.outcome] = outcomes.get(result.outcome, 0) + 1
        if result.reason is not None and reason is None:
            reason, why = str(result.reason), result.why
        gaps.append(result.diagnostics.get("first", {}).get("gap"))
        if dp is not None:
            noise_norms.append(noise.norm)
            relative.append(noise.norm / min(norms[index], dp.clip))
    return {
        "outcomes": outcomes,
        "reason": reason,
        "why": why,
        "first_span_gap": gaps,
        "noise_norm": float(np.mean(noise_norms)) if noise_norms else 0.0,
        "relative_noise": float(np.mean(relative)) if relative else 0.0,
        "attack_s": seconds,
        **pool(scores),
    }


@study(
    "text_dp",
    default=False,
    options=(
        Option("--text-dp-noise", "noise", "noise multipliers z of the text DP study (default 0,1e-10,...,1)", noises),
        Option("--text-dp-batches", "batch_sizes", "victim batch sizes of the text DP study (default 1,2)", ints),
        Option("--text-dp-clip", "clip", "client-level DP clip of the text DP study (default 1)", number),
        Option("--text-dp-trials", "trials", "victim batches per cell of the text DP study (default 4)", count),
        Option(
            "--text-dp-rounds",
            "long_run",
            f"rounds of the longer run whose ε is also given (default {LONG_RUN})",
            count,
        ),
    ),
)
def text_dp(
    noise: tuple[float, ...] = NOISES,
    batch_sizes: tuple[int, ...] = (1, 2),
    clip: float = 1.0,
    trials: int = 4,
    long_run: int = LONG_RUN,
) -> dict[str, Any]:
    """What client-level DP's ε stops the exact span attack: per noise multiplier, ε per round, and the attack on the
    raw view with DP per batch size, LoRA and full fine-tuning (tiny decoder), beside the no-DP baseline."""
    from hebench.inversion.text.sources import suite_source

    started = time.perf_counter()
    load_before = os.getloadavg()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    path = shipped_suite(SUITE).path
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    base_dp = suite_dp(raw)
    rounds = int(raw["training"]["rounds"])
    specs = {z: base_dp.model_copy(update={"noise_multiplier": z, "clip": clip}) for z in noise}
    budget = {
        z: {
            "epsilon_per_round": epsilon(s, 1),
            "epsilon_suite_run": epsilon(s, rounds),
            "epsilon_long_run": epsilon(s, long_run),
        }
        for z, s in specs.items()
    }
    rows = []
    try:
        for fine_tuning in ("lora", "full"):
            suite = parse_suite(_variant(raw, fine_tuning), f"{path} ({fine_tuning})")
            source = suite_source(suite, str(path))
            model = source.models(suite.configurations[0])
            for batch in batch_sizes:
                norms = _norms(model, suite, source.blocks, batch, trials)
                common = {"fine_tuning": fine_tuning, "batch_size": batch, "update_norm": float(np.mean(norms))}
                cell = _cell(model, suite, source.blocks, batch, trials, None, norms)
                rows.append({**common, "dp": False, "noise_multiplier": None, "epsilon_per_round": None, **cell})
                for z, spec in specs.items():
                    cell = _cell(model, suite, source.blocks, batch, trials, spec, norms)
                    rows.append({**common, "dp": True, "noise_multiplier": z, "clip": clip, **budget[z], **cell})
    finally:
        torch.set_num_threads(threads)
    return {
        "suite": str(path),
        "delta": base_dp.delta,
        "accountant": base_dp.accountant,
        "clip": clip,
        "rounds": rounds,
        "long_run_rounds": long_run,
        "epsilon_note": (
            f"epsilon_per_round: one client-level release (sampling rate 1, add/remove of a client's data), "
            f"{base_dp.accountant} accountant at delta {base_dp.delta:g}; epsilon_suite_run: the suite's {rounds} "
            f"round(s); epsilon_long_run: {long_run} rounds"
        ),
        "epsilons": [{"noise_multiplier": z, **budget[z]} for z in noise],
        "batch_sizes": list(batch_sizes),
        "trials": trials,
        "text_rule": "exact: at least one victim sequence recovered exactly",
        "tokens_rule": f"tokens (order aside): token recall >= {TOKENS_RECALL}, precision >= {TOKENS_PRECISION}",
        "caveat": CAVEAT,
        "thresholds": thresholds(rows),
        "threads": 1,
        "wall_s": time.perf_counter() - started,
        "loadavg_before": list(load_before),
        "loadavg_after": list(os.getloadavg()),
        "rows": rows,
    }
