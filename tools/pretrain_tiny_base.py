"""Pretrain hebench's tiny base decoder centrally on public Shakespeare, reproducibly (seeded).

    python tools/pretrain_tiny_base.py PATH/TO/tiny-shakespeare/input.txt

The public text is every speech of the tiny-shakespeare roles that are NOT in the shipped sample
(hebench.data.shakespeare.sample_split): the federated clients' lines are never seen. A byte-level BPE
vocabulary is trained on it, then the ``gpt2_tiny`` decoder, with AdamW on seeded batches of blocks
at a constant rate after a short warm-up (400 steps: the base knows the language, perplexity ~150
against 2,048 for an untrained model, and is not annealed into a minimum, so federated fine-tuning
goes on lowering perplexity; a longer, annealed run (800 steps, one-cycle: perplexity 97) left LoRA
fine-tuning on the clients' text almost nothing to gain on held-out text). Written to
hebench/models/language/pretrained/gpt2-tiny-shakespeare/: the weights (safetensors), the tokenizer
files and base.json (settings, wall and CPU seconds, the load average, final losses, checksums).
Same input, seed, versions and thread count: the same run; other machines may differ in the last bits
(floating-point reductions), so the shipped file's SHA-256 is the reference.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from dataclasses import asdict
from pathlib import Path

import torch

from hebench.data.bpe import train_bpe
from hebench.data.cache import card
from hebench.data.fetch import sha256_of
from hebench.data.shakespeare import sample_split, text_file
from hebench.data.text_blocks import encode_speeches
from hebench.models.language.decoder import build_decoder, decoder_shape
from hebench.models.language.local_steps import optimiser, train_steps
from hebench.models.language.next_token import next_token_loss
from hebench.models.language.pretrained import META, TINY_BASE, WEIGHTS


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("text", type=Path, help="tiny shakespeare's input.txt (or its folder)")
    parser.add_argument("--out", type=Path, default=TINY_BASE)
    parser.add_argument("--vocab", type=int, default=2048)
    parser.add_argument("--length", type=int, default=64, help="tokens per block")
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--schedule",
        choices=("constant", "onecycle"),
        default="constant",
        help="constant: 10 %% linear warm-up, then the full rate (fine-tuning continues where it stopped);"
        " onecycle: annealed to zero at the end",
    )
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--heldout", type=int, default=128, help="public blocks held out to report a loss")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    source = text_file(args.text)
    expected = card("tiny-shakespeare")["files"][0]["sha256"]
    if sha256_of(source) != expected:
        print(f"error: {source} is not tiny shakespeare (sha256 {expected})", file=sys.stderr)
        return 2
    start_wall, start_cpu = time.perf_counter(), time.process_time()
    split = sample_split(source)
    tokenizer = train_bpe(split.public, args.vocab)
    public = encode_speeches(split.public, tokenizer, args.length)
    order = torch.randperm(len(public), generator=torch.Generator().manual_seed(args.seed))
    heldout, train = public[order[: args.heldout]], public[order[args.heldout :]]
    clients_test = torch.cat([encode_speeches(c.test, tokenizer, args.length) for c in split.clients])
    shape = decoder_shape("gpt2_tiny")
    model = build_decoder(shape, tokenizer.vocab_size, tokenizer.end_of_text, seed=args.seed)
    opt = optimiser(model, "adamw", args.lr)
    warmup = max(1, args.steps // 10)
    schedule = (
        torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.lr, total_steps=args.steps, pct_start=0.1)
        if args.schedule == "onecycle"
        else torch.optim.lr_scheduler.LambdaLR(opt, lambda step: min(1.0, (step + 1) / warmup))
    )
    losses: list[float] = []
    for step in range(args.steps):
        losses += train_steps(model, train, steps=1, batch_size=args.batch, lr=args.lr, seed=args.seed + step, opt=opt)
        schedule.step()
        if (step + 1) % 100 == 0 or step + 1 == args.steps:
            print(f"step {step + 1}: train loss {sum(losses[-100:]) / len(losses[-100:]):.3f}", flush=True)
    wall, cpu = time.perf_counter() - start_wall, time.process_time() - start_cpu
    from safetensors.torch import save_model

    args.out.mkdir(parents=True, exist_ok=True)
    tokenizer.save(args.out)
    save_model(model, str(args.out / WEIGHTS))
    heldout_loss, clients_loss = next_token_loss(model, heldout), next_token_loss(model, clients_test)
    meta = {
        "model": "gpt2_tiny",
        "shape": asdict(shape),
        "parameters": sum(p.numel() for p in model.parameters()),
        "vocab_size": tokenizer.vocab_size,
        "end_of_text": tokenizer.end_of_text,
        "block_tokens": args.length,
        "text": {"file": "tiny-shakespeare input.txt", "sha256": expected, "public_speeches": len(split.public)},
        "public_blocks": {"train": len(train), "heldout": len(heldout)},
        "training": {
            "optimiser": f"adamw (weight decay 0.01), {args.schedule} schedule",
            "steps": args.steps,
            "batch_blocks": args.batch,
            "max_lr": args.lr,
            "seed": args.seed,
            "threads": args.threads,
        },
        "seconds": {"wall": round(wall, 1), "cpu": round(cpu, 1), "load_average_1min": os.getloadavg()[0]},
        "loss": {
            "train_last_100_steps": round(sum(losses[-100:]) / len(losses[-100:]), 4),
            "public_heldout": round(heldout_loss, 4),
            "sample_clients_test": round(clients_loss, 4),
            "sample_clients_test_perplexity": round(math.exp(clients_loss), 2),
            "untrained_uniform": round(math.log(tokenizer.vocab_size), 4),
        },
        "versions": {"torch": torch.__version__, "transformers": _version("transformers")},
        "command": "python tools/pretrain_tiny_base.py " + " ".join(sys.argv[1:]),
        "sha256": sha256_of(args.out / WEIGHTS),
    }
    (args.out / META).write_text(json.dumps(meta, indent=1) + "\n")
    print(json.dumps(meta["loss"] | meta["seconds"]))
    return 0


def _version(package: str) -> str:
    from importlib.metadata import version

    return version(package)


if __name__ == "__main__":
    raise SystemExit(main())
