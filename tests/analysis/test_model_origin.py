"""Beside accuracy or perplexity, the summary says where each model's starting weights come from."""

from __future__ import annotations

from types import SimpleNamespace

from hebench.analysis.model_origin import origin_notes
from hebench.config import ModelSpec


def _row(config: str, spec: ModelSpec | None) -> SimpleNamespace:
    return SimpleNamespace(config=config, model=spec and spec.name, model_origin=spec and spec.origin)


def test_a_pretrained_base_and_a_random_decoder_are_told_apart():
    base, random = ModelSpec(name="gpt2_tiny", pretrained=True), ModelSpec(name="gpt2_small")
    assert "pretrained centrally" in base.origin and "randomly initialised" in random.origin
    assert "untrained" in random.origin and "randomly initialised" in ModelSpec(name="lenet").origin


def test_one_note_per_model_naming_the_configurations_it_covers():
    tiny = ModelSpec(name="gpt2_tiny", pretrained=True)
    (note,) = origin_notes([_row("raw", tiny), _row("secagg", tiny)])
    assert note == f"model gpt2_tiny (every configuration): {tiny.origin}"
    lenet = ModelSpec(name="lenet")
    mixed = origin_notes([_row("raw", tiny), _row("old", None), _row("images", lenet)])
    assert mixed == [f"model gpt2_tiny (raw): {tiny.origin}", f"model lenet (images): {lenet.origin}"]
