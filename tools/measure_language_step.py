"""Measure one client's local step for the language models: parameters, update size, seconds, peak memory (JSON).

    python tools/measure_language_step.py [--out FILE] [--steps N] [--models gpt2_tiny,gpt2_small]

For each decoder (randomly initialised; the tiny one at a 2,048-token vocabulary, GPT-2 small at GPT-2's
50,257) and each fine-tuning mode (LoRA r=8 on c_attn, full), a fresh process builds the model, takes one
warm-up step and then ``--steps`` SGD steps on random blocks of 8 x 64 tokens with ONE thread, and
reports: total and trainable parameters, the trainable share, median wall and CPU seconds per step, and
the process's peak resident memory. Wall seconds depend on the machine's load (recorded beside them);
CPU seconds less so.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

VOCAB = {"gpt2_tiny": 2048, "gpt2_small": 50257}
BATCH, LENGTH = 8, 64


def measure(model_name: str, mode: str, steps: int) -> dict:
    import torch

    torch.set_num_threads(1)
    from hebench.models.language.adapter_update import update_size
    from hebench.models.language.decoder import build_decoder, decoder_shape
    from hebench.models.language.local_steps import train_steps
    from hebench.models.language.lora import LoraSpec, attach_lora

    vocab = VOCAB[model_name]
    model = build_decoder(decoder_shape(model_name), vocab, vocab - 1)
    total = sum(p.numel() for p in model.parameters())
    if mode == "lora":
        model = attach_lora(model, LoraSpec(rank=8))
    blocks = torch.randint(0, vocab, (BATCH * (steps + 1), LENGTH), generator=torch.Generator().manual_seed(0))
    train_steps(model, blocks[:BATCH], steps=1, batch_size=BATCH, lr=1e-3)  # warm-up
    walls, cpus = [], []
    for i in range(1, steps + 1):
        wall, cpu = time.perf_counter(), time.process_time()
        train_steps(model, blocks[i * BATCH : (i + 1) * BATCH], steps=1, batch_size=BATCH, lr=1e-3)
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    trainable = update_size(model)
    return {
        "model": model_name,
        "mode": "LoRA r=8 (c_attn)" if mode == "lora" else "full fine-tuning",
        "vocab": vocab,
        "parameters": total,
        "trainable": trainable,
        "trainable_share_percent": round(100 * trainable / total, 4),
        "update_bytes_float32": 4 * trainable,
        "batch": f"{BATCH} x {LENGTH} tokens",
        "steps_timed": steps,
        "seconds_per_step_wall_median": round(statistics.median(walls), 3),
        "seconds_per_step_cpu_median": round(statistics.median(cpus), 3),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "load_average_1min": os.getloadavg()[0],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("language-step.json"))
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--models", default="gpt2_tiny,gpt2_small")
    parser.add_argument("--one", nargs=2, metavar=("MODEL", "MODE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure(args.one[0], args.one[1], args.steps)))
        return 0
    rows = []
    for model_name in args.models.split(","):
        for mode in ("lora", "full"):
            cmd = [sys.executable, __file__, "--one", model_name, mode, "--steps", str(args.steps)]
            done = subprocess.run(cmd, capture_output=True, text=True, check=True)
            rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
            print(json.dumps(rows[-1]), flush=True)
    args.out.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
