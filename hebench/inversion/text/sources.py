"""Where a text-leakage campaign takes its models, blocks and vocabulary: a language-model suite or a run folder.

A suite: each configuration's model built as its clients build it (the suite's seed), the clients' blocks loaded
from the suite's data. A run folder (``hebench run`` of a language suite): the suite it ran, each configuration's
model rebuilt from ``language-model.json`` and the run's tokenizer (:func:`load_run_model`, the initial global
model: the first round's updates were computed on it), the clients' blocks as the run loaded them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from hebench.config import Configuration, Suite
from hebench.errors import ParameterError


@dataclass(frozen=True)
class TextSource:
    suite: Suite
    models: Callable[[Configuration], nn.Module]
    blocks: Sequence[torch.Tensor]  # each client's token blocks (n, L)
    decode: Callable[[Sequence[int]], str]
    origin: str  # the suite file or run folder


def is_text_run(path: Path) -> bool:
    """A run folder of a language-model suite (it keeps ``language-model.json``)."""
    return path.is_dir() and (path / "language-model.json").is_file()


def is_text_suite(suite: Suite) -> bool:
    return suite.data.is_text and suite.model.is_decoder


def _blocks(suite: Suite) -> tuple[list[torch.Tensor], object]:
    from hebench.data.registry import load_federated

    data = load_federated(suite.data, suite.seed)
    if data.tokenizer is None:
        raise ParameterError(f"data {suite.data.dataset} holds no text", "attack a text suite (dataset shakespeare)")
    return [c.x for c in data.clients], data.tokenizer


def suite_source(suite: Suite, origin: str) -> TextSource:
    from hebench.models.language.build import build_language_model

    if not is_text_suite(suite):
        raise ParameterError(f"{origin} is not a language-model suite", "attack a suite with a decoder on text")
    blocks, tokenizer = _blocks(suite)

    def models(config: Configuration) -> nn.Module:
        spec = suite.model_for(config)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(suite.seed)
            vocab = spec.vocab_size or tokenizer.vocab_size  # type: ignore[attr-defined]
            return build_language_model(spec, vocab, tokenizer.end_of_text, suite.seed)  # type: ignore[attr-defined]

    return TextSource(suite, models, blocks, tokenizer.decode, origin)  # type: ignore[attr-defined]


def run_source(path: Path) -> TextSource:
    from hebench.config import load_suite
    from hebench.models.language.run_files import load_run_model
    from hebench.results.run_folder import RunFolder

    if not is_text_run(path):
        raise ParameterError(f"{path} is not a language-model run folder", "pass a folder `hebench run` wrote")
    suite = load_suite(RunFolder.of(path).suite)
    blocks, _ = _blocks(suite)
    _, tokenizer = load_run_model(path, suite.configurations[0].label)

    def models(config: Configuration) -> nn.Module:
        return load_run_model(path, config.label)[0]

    return TextSource(suite, models, blocks, tokenizer.decode, str(path))
