"""``hebench attack``: the full suite, and attackers side by side (dry runs: observations and masks only)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from hebench.cli.main import app

runner = CliRunner()


def test_attack_full_is_the_full_suite_dry_run(tmp_path):
    result = runner.invoke(
        app,
        [
            "attack",
            "--full",
            "--dry-run",
            "--set",
            "privacy.images=1",
            "--set",
            "privacy.ratios=[0,0.1]",
            "--out",
            str(tmp_path),
            "--format",
            "json",
        ],
    )
    assert result.exit_code == 0, result.output
    summaries = json.loads(result.stdout)["summaries"]
    attackers = {s["attacker"] for s in summaries}
    assert attackers == {"mask-aware", "fedml-he-zeros", "fedml-he-noise"}
    assert {s["mask_source"] for s in summaries if s["mask"] == "sensitivity"} == {"local", "sample"}
    assert all(s["dataset"] == "natural" and s["threat"] == "gradient" for s in summaries)
    campaign = [json.loads(line) for line in (tmp_path / "attacks.jsonl").read_text().splitlines()]
    assert campaign[-1]["kind"] == "attack_campaign" and campaign[-1]["wall_s"] > 0


def test_attack_flags_side_by_side_attackers(tmp_path):
    args = ["attack", "--view", "selective", "--attacker", "mask-aware,fedml-he-zeros", "--dataset", "natural"]
    args += ["--images", "1", "--seeds", "1", "--dry-run", "--out", str(tmp_path), "--format", "json"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    plans = [s["plan"] for s in json.loads(result.stdout)["summaries"]]
    assert plans == ["selective/sensitivity-0.1/mask-aware", "selective/sensitivity-0.1/fedml-he-zeros"]
    bad = runner.invoke(app, ["attack", "--view", "selective", "--attacker", "oracle", "--dry-run"])
    assert bad.exit_code == 2 and "attacker" in bad.output
