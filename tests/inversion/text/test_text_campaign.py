"""``hebench attack`` on a language-model suite: each configuration's views, as its mode's spec gives them, attacked
and scored; recovered text beside the original."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

import hebench.models.language  # noqa: F401  (hides a broken torchvision before transformers loads)
from hebench.cli.main import app
from hebench.config import load_suite, parse_suite
from hebench.inversion.text.campaign import views_of

ROOT = Path(__file__).resolve().parents[3]


def test_each_configuration_gives_the_views_its_mode_defines():
    suite = load_suite(ROOT / "suites" / "text-leakage.yaml")
    views = {c.label: [(v.adversary, v.view) for v in views_of(c)] for c in suite.configurations}
    assert views["raw"] == [("aggregator", "plain")] and views["raw/full"] == [("aggregator", "plain")]
    assert views["host-he/tenseal-ckks"] == [("aggregator", "encrypted"), ("colluding client", "host-he-colluder")]
    assert views["selective/sensitivity-10"] == [("aggregator", "selective-global")]  # the mask its run agrees
    assert views["selective/magnitude-10"] == [("aggregator", "selective")]  # the same mask from any data
    assert views["secagg"] == [("aggregator", "secagg-sum"), ("aggregator", "model-inconsistency")]
    assert views["secret-sharing-3"] == [("one share holder", "shares-1"), ("all share holders", "shares-all")]
    assert [v for k, v in views.items() if k.startswith("raw/dp")] == [[("aggregator", "dp")]]


def _tiny_suite(tmp_path: Path) -> Path:
    raw = yaml.safe_load((ROOT / "suites" / "text-leakage.yaml").read_text())
    raw["data"]["block_tokens"] = 8
    raw["configurations"] = [
        {"mode": "raw", "fine_tuning": {"kind": "full"}},
        {"mode": "offload", "adapter": "tenseal-ckks"},
    ]
    parse_suite(raw)  # valid as a suite
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


@pytest.mark.slow  # loads the Shakespeare sample and the pretrained base: ~15 s of CPU
def test_attack_command_on_a_language_suite_recovers_the_plain_view_and_nothing_under_he(tmp_path):
    result = CliRunner().invoke(
        app,
        ["attack", str(_tiny_suite(tmp_path)), "--batch-size", "1", "--out", str(tmp_path / "out"), "--format", "json"],
    )
    assert result.exit_code == 0, result.output
    plain, sealed = json.loads(result.stdout)["summaries"]
    # the plain update: the victim's block read back, its first 7 tokens exactly (the span), scored with ROUGE
    assert plain["view"] == "plain" and plain["outcomes"] == {"recovered": 1} and plain["rouge1"] >= 7 / 8
    assert plain["examples"][0]["original"] and plain["examples"][0]["recovered"]
    # offload: the aggregator holds ciphertext; nothing recovered, and the reason says so
    assert sealed["view"] == "encrypted" and sealed["outcomes"] == {"failed": 1} and sealed["token_recall"] == 0.0
    assert sealed["why"].startswith("nothing-observed")
    lines = [json.loads(line) for line in (tmp_path / "out" / "text-attacks.jsonl").read_text().splitlines()]
    records = [r for r in lines if r["kind"] == "text_attack"]  # typed records, as `hebench run` writes them
    assert [r["outcome"] for r in records] == ["recovered", "failed"] and records[1]["recovered_tokens"] == []
    assert [r["view"] for r in lines if r["kind"] == "text_attack_summary"] == ["plain", "encrypted"]


def test_a_view_option_is_refused_on_a_language_suite(tmp_path):
    result = CliRunner().invoke(app, ["attack", str(ROOT / "suites" / "text-leakage.yaml"), "--view", "he"])
    assert result.exit_code != 0
    assert "--view does not apply to a language-model suite" in result.output


@pytest.mark.parametrize(("params", "holders"), [({}, 2), ({"aggregators": 3}, 3)])
def test_all_share_holders_are_as_many_as_the_protocol_splits_into(monkeypatch, params, holders):
    import hebench.inversion.text.campaign as campaign

    raw = yaml.safe_load((ROOT / "suites" / "text-leakage.yaml").read_text())
    raw["configurations"] = [{"name": "ss", "mode": "secret-sharing", "params": params}]
    config = parse_suite(raw, "ss").configurations[0]
    seen: list[int] = []
    monkeypatch.setattr(campaign, "shares_view", lambda model, victim, training, k, *rest: seen.append(k))
    for view in views_of(config):
        campaign.observe(view, config, None, [None], None)  # type: ignore[arg-type]
    assert seen == [1, holders]  # one holder, then all K (the protocol's default K is 2)
