"""Text leakage grid: the exact span attack against every view of ``suites/text-leakage.yaml``, per victim batch
size, for LoRA adapters and full fine-tuning, and per number of local steps.

For each fine-tuning (the suite as written: LoRA r=64 on ``c_attn``; and the same suite with every configuration
fully fine-tuned), each victim batch size and each local-step count, every configuration's views
(:func:`hebench.inversion.text.campaign.views_of`) are rebuilt through the protections' own code and attacked;
per cell: the outcome and its reason, exact-sequence rate with its Wilson interval, ROUGE-1/2/L, token precision
and recall, the attack's seconds, and one recovered sequence beside the original. The tiny pretrained decoder
(width 128) on 16-token blocks: batch x 15 inputs against the width (full) or the adapter's rank (LoRA) says where
the attack must stop.
"""

from __future__ import annotations

import copy
import os
import time
from typing import Any

import torch
import yaml

from hebench.bench.registry import Option, ints, study
from hebench.config import parse_suite
from hebench.config.catalog import shipped_suite

SUITE = "text-leakage"


def _variant(raw: dict[str, Any], fine_tuning: str, steps: int) -> dict[str, Any]:
    """The suite with every configuration fully fine-tuned (``full``) or as written (``lora``), and ``steps``."""
    out = copy.deepcopy(raw)
    out["training"]["local_steps"] = steps
    if fine_tuning == "full":
        out["model"]["fine_tuning"] = {"kind": "full"}
        out["configurations"] = [c for c in out["configurations"] if c.get("name") != "raw/full"]
    return out


def _row(summary: dict[str, Any], fine_tuning: str) -> dict[str, Any]:
    row = {"fine_tuning": fine_tuning, **summary}
    row["example"] = summary["examples"][0] if summary["examples"] else None
    row.pop("examples")
    return row


@study(
    SUITE,
    default=False,
    options=(
        Option("--text-batches", "batch_sizes", "victim batch sizes of the text-leakage grid (default 1,2,4,8)", ints),
        Option("--text-steps", "steps", "local SGD steps of the text-leakage grid (default 1)", ints),
    ),
)
def text_leakage(batch_sizes: tuple[int, ...] = (1, 2, 4, 8), steps: tuple[int, ...] = (1,)) -> dict[str, Any]:
    """Text leakage per view, batch size, LoRA/full and local steps (the exact span attack, tiny decoder)."""
    from hebench.inversion.text.campaign import attack_views
    from hebench.inversion.text.sources import suite_source

    started = time.perf_counter()
    load_before = os.getloadavg()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    path = shipped_suite(SUITE).path
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    rows, notes = [], []
    try:
        for fine_tuning in ("lora", "full"):
            for step_count in steps:
                suite = parse_suite(
                    _variant(raw, fine_tuning, step_count), f"{path} ({fine_tuning}, {step_count} steps)"
                )
                source = suite_source(suite, str(path))
                summaries, skipped = attack_views(suite, source.models, source.blocks, source.decode, batch_sizes)
                rows += [_row(s, fine_tuning) for s in summaries]
                notes += [n for n in skipped if n not in notes]
    finally:
        torch.set_num_threads(threads)
    return {
        "suite": str(path),
        "batch_sizes": list(batch_sizes),
        "steps": list(steps),
        "threads": 1,
        "wall_s": time.perf_counter() - started,
        "loadavg_before": list(load_before),
        "loadavg_after": list(os.getloadavg()),
        "notes": notes,
        "rows": rows,
    }
