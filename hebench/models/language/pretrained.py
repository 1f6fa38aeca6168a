"""The tiny decoder pretrained centrally on public Shakespeare, shipped with hebench (tools/pretrain_tiny_base.py).

Federated fine-tuning starts, as in practice, from a model that already knows the language: the
``gpt2_tiny`` decoder trained on the speeches of the tiny-shakespeare roles that are not in the shipped
sample (no line a sample client holds), with a byte-level BPE vocabulary trained on that same public
text (400 AdamW steps at a constant rate, ~47 s of one CPU thread: perplexity 160 on the sample clients'
held-out speeches, against ~2,000 untrained, and not annealed, so fine-tuning goes on lowering it).
The folder holds the weights (``model.safetensors``), the tokenizer (``vocab.json``,
``merges.txt``) and ``base.json`` (shape, vocabulary, how it was trained, its losses, the weights'
SHA-256). A changed weights file is refused.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from torch import nn

from hebench.data.bpe import TextTokenizer, load_bpe
from hebench.data.fetch import sha256_of
from hebench.errors import DatasetError
from hebench.models.language.decoder import DecoderShape, build_decoder

TINY_BASE = Path(__file__).resolve().parent / "pretrained" / "gpt2-tiny-shakespeare"
WEIGHTS, META = "model.safetensors", "base.json"


@dataclass(frozen=True)
class PretrainedBase:
    model: nn.Module  # a transformers GPT2LMHeadModel
    tokenizer: TextTokenizer
    meta: dict


def read_meta(folder: Path = TINY_BASE) -> dict:
    path = folder / META
    if not path.is_file():
        raise DatasetError(f"no pretrained base at {folder} ({META} missing)", "run tools/pretrain_tiny_base.py")
    return json.loads(path.read_text())


def load_pretrained_base(folder: Path = TINY_BASE) -> PretrainedBase:
    """The pretrained model (training mode) and its tokenizer; the weights' checksum is checked first."""
    from safetensors.torch import load_model

    meta = read_meta(folder)
    weights = folder / WEIGHTS
    if not weights.is_file() or sha256_of(weights) != meta["sha256"]:
        raise DatasetError(
            f"{weights} is missing or does not match its SHA-256 in {META} ({meta['sha256'][:12]}…)",
            "restore the file from the hebench checkout, or re-create it with tools/pretrain_tiny_base.py",
        )
    model = build_decoder(DecoderShape(**meta["shape"]), meta["vocab_size"], meta["end_of_text"], seed=0)
    load_model(model, str(weights), strict=True)
    model.train()
    return PretrainedBase(model, load_bpe(folder), meta)
