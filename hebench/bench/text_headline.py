"""DAGER's headline on hebench's GPT-2-small configuration (issue #39): the exact span attack on raw single-step
updates of batches of 1-32 sequences of 32 tokens, full fine-tuning and LoRA.

The decoder has GPT-2 small's published shape (12 layers, width 768, 50,257 vocabulary entries, 1,024
positions) and is **randomly initialised** (no weights can be downloaded here; the attack rests on the linear
algebra of the first layers, not on pretraining). The victim's blocks are the shipped Shakespeare sample
encoded with the tiny base's vocabulary; every one of the 50,257 embedding rows is tested at every position.
Dropout is 0 by default (the attack's premise: the first layer's inputs are the tokens' embeddings); GPT-2's own
0.1 randomises them in training (``--headline-dropout 0.1`` measures what that does).
Per fine-tuning and batch size: the outcome counts, exact-sequence rate and ROUGE-1 >= 0.99 rate with Wilson
intervals over sequences, ROUGE-1/2/L, token precision/recall, the attack's seconds, and whether ``B x (L - 1)``
inputs stay below the width (full) or the adapter's rank (LoRA) — where the theory says the attack must stop.
"""

from __future__ import annotations

import os
import time
from typing import Any

import torch

from hebench.bench.registry import Option, count, ints, number, study, words
from hebench.config import parse_suite
from hebench.errors import ParameterError

WIDTH = 768  # GPT-2 small
GOAL = {"rouge1": 0.99, "exact_rate": 0.9}


def _suite(length: int, rank: int, fine_tunings: tuple[str, ...], dropout: float) -> dict[str, Any]:
    configurations = []
    if "lora" in fine_tunings:
        configurations.append({"name": f"raw/lora-r{rank}", "mode": "raw"})
    if "full" in fine_tunings:
        configurations.append({"name": "raw/full", "mode": "raw", "fine_tuning": {"kind": "full"}})
    return {
        "name": "text-headline",
        "seed": 0,
        "data": {"dataset": "shakespeare", "clients": 1, "block_tokens": length},
        "model": {
            "name": "gpt2_small",
            "vocab_size": 50257,
            "dropout": dropout,
            "fine_tuning": {"kind": "lora", "rank": rank, "alpha": rank, "dropout": 0.0, "targets": ["c_attn"]},
        },
        "training": {"rounds": 1, "local_steps": 1, "batch_size": 1, "optimizer": "sgd", "lr": 0.01},
        "configurations": configurations,
    }


def _fine_tunings(text: str) -> tuple[str, ...]:
    chosen = words(text)
    unknown = sorted(set(chosen) - {"full", "lora"})
    if unknown:
        raise ParameterError(f"text_headline has no fine-tuning '{unknown[0]}'", "name full, lora or both")
    return chosen


def _device(text: str) -> str:
    if text not in ("auto", "cpu", "cuda"):
        raise ParameterError(f"'{text}' is not a device", "write auto, cpu or cuda")
    return text


def _row(summary: dict[str, Any], rank: int, length: int) -> dict[str, Any]:
    full = summary["config"] == "raw/full"
    inputs = summary["batch_size"] * (length - 1)
    limit = WIDTH if full else rank
    row = {key: value for key, value in summary.items() if key != "examples"}
    row.update(
        {
            "fine_tuning": "full" if full else f"lora r={rank}",
            "inputs_behind_update": inputs,
            "limit": limit,
            "within_theory": inputs < limit,
            "meets_goal": summary["rouge1"] >= GOAL["rouge1"] and summary["exact_rate"] >= GOAL["exact_rate"],
            "example": summary["examples"][0] if summary["examples"] else None,
        }
    )
    return row


@study(
    "text_headline",
    default=False,
    options=(
        Option("--headline-batches", "batch_sizes", "victim batch sizes (default 1,2,4,8,16,24,32)", ints),
        Option("--headline-trials", "trials", "victim batches per size (default 2)", count),
        Option("--headline-length", "length", "tokens per sequence (default 32)", count),
        Option("--headline-rank", "rank", "LoRA rank on c_attn (default 256)", count),
        Option("--headline-fine-tuning", "fine_tunings", "full, lora or both (default both)", _fine_tunings),
        Option("--headline-device", "device", "auto (CUDA when present), cpu or cuda", _device),
        Option("--headline-dropout", "dropout", "decoder dropout in training (default 0; GPT-2: 0.1)", number),
    ),
)
def text_headline(
    batch_sizes: tuple[int, ...] = (1, 2, 4, 8, 16, 24, 32),
    trials: int = 2,
    length: int = 32,
    rank: int = 256,
    fine_tunings: tuple[str, ...] = ("full", "lora"),
    device: str = "auto",
    dropout: float = 0.0,
) -> dict[str, Any]:
    """DAGER's headline on GPT-2 small (random init): exact span attack on raw single-step updates, B x 32 tokens."""
    from hebench.inversion.devices import resolve_device
    from hebench.inversion.text.campaign import attack_views
    from hebench.inversion.text.sources import suite_source
    from hebench.inversion.text.span_attack import SpanConfig, span_attack

    dev = resolve_device(device)
    started, load_before = time.perf_counter(), os.getloadavg()
    suite = parse_suite(_suite(length, rank, fine_tunings, dropout), "text_headline")
    source = suite_source(suite, "text_headline")
    held = len(source.blocks[0])
    sizes = tuple(b for b in batch_sizes if b * trials <= held)
    cfg = SpanConfig(device=dev)
    summaries, _ = attack_views(
        suite, source.models, source.blocks, source.decode, sizes, trials, lambda obs: span_attack(obs, cfg)
    )
    rows = [_row(s, rank, length) for s in summaries]
    return {
        "model": "GPT-2 small shape (124 M parameters), randomly initialised",
        "dropout": dropout,
        "length": length,
        "lora_rank": rank,
        "device": dev,
        "gpu": torch.cuda.get_device_name() if dev == "cuda" else None,
        "threads": torch.get_num_threads(),
        "trials": trials,
        "batch_sizes": list(sizes),
        "skipped_batch_sizes": [b for b in batch_sizes if b not in sizes],
        "blocks_held": held,
        "goal": f"ROUGE-1 >= {GOAL['rouge1']} and exact-sequence rate >= {GOAL['exact_rate']} for B = 1..32",
        "wall_s": time.perf_counter() - started,
        "loadavg_before": list(load_before),
        "loadavg_after": list(os.getloadavg()),
        "rows": rows,
    }
