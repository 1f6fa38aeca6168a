"""What a text run's folder keeps so that attacks and reports decode and rebuild exactly what the clients used.

``tokenizer/`` holds the vocabulary (``vocab.json``, ``merges.txt``); ``language-model.json`` says which decoder
(shape, vocabulary, ``<|endoftext|>`` id, the pretrained base and its SHA-256, block length) and, per
configuration, its fine-tuning and the update's layout (each shared tensor's name and shape, in update order:
the coordinates of every update vector, mask and attack view). :func:`load_run_model` rebuilds a configuration's
model from them, optionally with a round's global checkpoint loaded.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from hebench.config import Suite
from hebench.data.bpe import TextTokenizer, load_bpe
from hebench.errors import ParameterError
from hebench.models.language.build import build_language_model
from hebench.models.language.decoder import decoder_shape
from hebench.models.language.pretrained import read_meta
from hebench.models.shared import load_shared, shared_tensors
from hebench.results.run_folder import RunFolder

FORMAT = 1


def update_layout(model: nn.Module) -> list[tuple[str, list[int]]]:
    """Each tensor an update carries, by name and shape, in update order."""
    return [(name, list(p.shape)) for name, p in shared_tensors(model)]


def describe(suite: Suite, vocab_size: int, end_of_text: int) -> dict[str, Any]:
    """``language-model.json``'s content for ``suite`` (its layouts from skeletons on torch's meta device)."""
    model = suite.model
    configurations = {}
    for config in suite.configurations:
        spec = suite.model_for(config).model_copy(update={"pretrained": False})  # same shapes, nothing read
        with torch.device("meta"):
            built = build_language_model(spec, spec.vocab_size or vocab_size, end_of_text, seed=0)
        layout = update_layout(built)
        configurations[config.label] = {
            "fine_tuning": spec.fine_tuning.model_dump(mode="json"),
            "parameters": sum(p.numel() for p in built.parameters()),
            "update_parameters": sum(p.numel() for _, p in shared_tensors(built)),
            "update_layout": layout,
        }
    base = None
    if model.pretrained:
        meta = read_meta()
        base = {"model": meta["model"], "sha256": meta["sha256"], "text": meta["text"]}
    return {
        "format": FORMAT,
        "decoder": model.name,
        "shape": asdict(decoder_shape(model.name)),
        "vocab_size": vocab_size,  # the tokenizer's
        "embedding_rows": model.vocab_size or vocab_size,  # model.vocab_size pads past it (rows never read)
        "end_of_text": end_of_text,
        "block_tokens": suite.data.block_tokens,
        "tokenizer": {"source": suite.data.vocabulary.source, "folder": "tokenizer"},
        "pretrained_base": base,  # None: randomly initialised from the suite's seed
        "seed": suite.seed,
        "configurations": configurations,
    }


def write_run_files(folder: RunFolder, suite: Suite, tokenizer: TextTokenizer) -> None:
    """Write the run's tokenizer and ``language-model.json`` into ``folder``."""
    tokenizer.save(folder.tokenizer)
    description = describe(suite, tokenizer.vocab_size, tokenizer.end_of_text)
    folder.language_model.write_text(json.dumps(description, indent=1) + "\n", encoding="utf-8")


def load_run_model(run_dir: str | Path, label: str, round_index: int | None = None) -> tuple[nn.Module, TextTokenizer]:
    """Configuration ``label``'s model as its clients built it (the suite's seed, the run's vocabulary), with the
    global model after ``round_index`` loaded from its checkpoint (None: the initial model), and the tokenizer."""
    from hebench.config import load_suite

    folder = RunFolder.of(run_dir)
    suite = load_suite(folder.suite)
    configs = {c.label: c for c in suite.configurations}
    if label not in configs:
        raise ParameterError(f"{folder.root} has no configuration {label!r}", f"choose one of {', '.join(configs)}")
    tokenizer = load_bpe(folder.tokenizer)
    spec = suite.model_for(configs[label])
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(suite.seed)  # as LocalModel builds it
        model = build_language_model(spec, spec.vocab_size or tokenizer.vocab_size, tokenizer.end_of_text, suite.seed)
    if round_index is not None:
        path = folder.checkpoint(label, round_index)
        if not path.is_file():
            raise ParameterError(f"no checkpoint of round {round_index} at {path}", "choose a round the run completed")
        vector = np.load(path)
        size = sum(p.numel() for _, p in shared_tensors(model))
        if len(vector) != size:
            raise ParameterError(
                f"{path} holds {len(vector)} values; {label}'s update has {size}", "use this run's own checkpoints"
            )
        load_shared(model, vector)
    return model, tokenizer
