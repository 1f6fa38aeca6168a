"""The text dataset, the GPT-2 decoders and their fine-tuning in suites: what validates, and each mistake's field
and fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from hebench.config import FullFineTuning, LoraFineTuning, load_suite, parse_suite
from hebench.errors import SuiteError

ROOT = Path(__file__).resolve().parents[2]
TEXT = {
    "name": "t",
    "data": {"dataset": "shakespeare", "clients": 3},
    "model": {"name": "gpt2_tiny", "pretrained": True, "fine_tuning": {"kind": "lora"}},
    "configurations": [{"mode": "raw"}],
}


def _with(**blocks: dict) -> dict:
    return {**TEXT, **blocks}


@pytest.mark.parametrize("name", ["language", "language-gpt2"])
def test_shipped_language_suites_validate(name):
    suite = load_suite(ROOT / "suites" / f"{name}.yaml")
    assert suite.data.dataset == "shakespeare" and suite.model.is_decoder and suite.model.task == "next-token"


def test_a_text_suite_reads_the_shipped_sample_by_default_and_lora_defaults_to_rank_8_on_c_attn():
    suite = parse_suite(TEXT)
    assert suite.data.sample and suite.data.block_tokens == 64 and suite.data.vocabulary.source == "pretrained"
    assert suite.model.fine_tuning == LoraFineTuning(kind="lora", rank=8, alpha=16.0, dropout=0.0, targets=("c_attn",))
    assert parse_suite(_with(data={"dataset": "shakespeare", "sample": False})).data.sample is False
    assert parse_suite(_with(data={"dataset": "shakespeare", "path": "/x/input.txt"})).data.sample is False


def test_a_configuration_may_fine_tune_in_full_beside_lora_and_says_so_in_its_label():
    suite = parse_suite(_with(configurations=[{"mode": "raw"}, {"mode": "raw", "fine_tuning": {"kind": "full"}}]))
    lora, full = suite.configurations
    assert (lora.label, full.label) == ("raw", "raw/full")
    assert suite.model_for(lora).fine_tuning.kind == "lora"
    assert suite.model_for(full).fine_tuning == FullFineTuning() and suite.model_for(full).pretrained


@pytest.mark.parametrize(
    ("blocks", "field", "words"),
    [
        ({"model": {"name": "mlp"}}, "model.name", "use a GPT-2 decoder"),
        ({"data": {"dataset": "digits"}}, "data.dataset", "use dataset: shakespeare"),
        ({"model": {"name": "gpt2_small", "pretrained": True}}, "model", "pretrained: true loads the base"),
        (
            {"model": {"name": "gpt2_tiny", "fine_tuning": {"kind": "lora", "rank": 0}}},
            "model.fine_tuning.rank",
            "greater than or equal to 1",
        ),
        (
            {"model": {"name": "gpt2_tiny", "fine_tuning": {"kind": "lora", "targets": ["q_proj"]}}},
            "model.fine_tuning",
            "not a GPT-2 projection",
        ),
        ({"model": {"name": "gpt2_tiny", "fine_tuning": {"kind": "dora"}}}, "model.fine_tuning", "full"),
        (
            {"data": {"dataset": "shakespeare", "tokenizer": {"source": "train", "vocab_size": 1000}}},
            "data.tokenizer.source",
            "reads its own vocabulary",
        ),
        (
            {"data": {"dataset": "shakespeare", "tokenizer": {"vocab_size": 1000}}},
            "data.tokenizer",
            "set source: train",
        ),
        ({"data": {"dataset": "shakespeare", "tokenizer": {"source": "files"}}}, "data.tokenizer", "set path"),
        ({"data": {"dataset": "shakespeare", "block_tokens": 129}}, "data.block_tokens", "at most 128"),
        ({"data": {"dataset": "shakespeare", "block_tokens": 1}}, "data.block_tokens", "greater"),
        (
            {"data": {"dataset": "shakespeare", "sample": True, "path": "/x"}},
            "data",
            "no path",
        ),
        ({"model": {"name": "gpt2_tiny", "pretrained": True, "vocab_size": 50257}}, "model", "remove vocab_size"),
        (
            {"configurations": [{"mode": "raw", "dp": {"level": "sample", "noise_multiplier": 1.0}}]},
            "configurations.0.dp.level",
            "use dp: {level: client",
        ),
        (
            {"privacy": {"attack": "idlg", "model": "mlp"}},
            "privacy",
            "its text_leakage section",
        ),
    ],
)
def test_language_mistakes_name_their_field_and_fix(blocks, field, words):
    with pytest.raises(SuiteError) as info:
        parse_suite(_with(**blocks), "my.yaml")
    assert f"field '{field}'" in str(info.value) and words in str(info.value), str(info.value)
    assert info.value.fix


@pytest.mark.parametrize(
    ("raw", "field", "words"),
    [
        (
            {"name": "t", "model": {"fine_tuning": {"kind": "lora"}}, "configurations": [{"mode": "raw"}]},
            "model",
            "LoRA adapters attach",
        ),
        (
            {"name": "t", "configurations": [{"mode": "raw", "fine_tuning": {"kind": "full"}}]},
            "configurations.0.fine_tuning",
            "fine_tuning chooses",
        ),
        (
            {"name": "t", "data": {"tokenizer": {"source": "train"}}, "configurations": [{"mode": "raw"}]},
            "data.tokenizer",
            "encodes text",
        ),
    ],
)
def test_image_suites_refuse_the_language_options(raw, field, words):
    with pytest.raises(SuiteError) as info:
        parse_suite(raw, "my.yaml")
    assert f"field '{field}'" in str(info.value) and words in str(info.value), str(info.value)


def test_adamw_is_an_optimiser_and_text_suites_take_every_shakespeare_role():
    suite = parse_suite(
        _with(training={"optimizer": "adamw", "lr": 0.003}, data={"dataset": "shakespeare", "clients": "all"})
    )
    assert suite.training.optimizer == "adamw" and suite.data.clients == "all"
