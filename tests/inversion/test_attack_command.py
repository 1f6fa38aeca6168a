"""``hebench attack``: the full suite, attackers side by side, a suite's options honoured or refused, and an
existing run folder's recorded views (dry runs: observations and masks only)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hebench.cli.main import app
from tests.results.runs import RUN

runner = CliRunner()


@pytest.mark.slow  # plans every attack of the full privacy suite
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


QUICKSTART = Path(__file__).resolve().parents[2] / "suites" / "quickstart.yaml"


def _run_folder(dst: Path, privacy: dict | None, attacked: dict[str, tuple[str, float]] | None = None) -> Path:
    """``run-offload`` (raw, host-he and offload CKKS on digits, 2 clients) with ``privacy`` in its recorded suite
    and an ``attack_summary`` per plan in ``attacked`` (plan -> recorded view and encrypted ratio)."""
    lines = [json.loads(line) for line in (RUN / "results.jsonl").read_text().splitlines() if line.strip()]
    for rec in lines:
        if rec["kind"] == "run" and privacy is not None:
            rec["suite"]["privacy"] = privacy
    schema = lines[0]["schema"]
    for plan, (view, ratio) in (attacked or {}).items():
        lines.append(
            {"schema": schema, "kind": "attack_summary", "time": 0.0, "plan": plan, "attack": "idlg", "view": view}
            | {"ratio": ratio, "model": "mlp", "batch_size": 1, "images": 2, "seeds": 1, "restarts": 1, "scores": {}}
        )
    dst.mkdir(parents=True)
    (dst / "results.jsonl").write_text("".join(json.dumps(rec) + "\n" for rec in lines))
    return dst


def _attack(*args: str) -> tuple[int, str, dict | None]:
    result = runner.invoke(app, ["attack", *args])
    data = json.loads(result.stdout) if result.exit_code == 0 and "--format" in args else None
    return result.exit_code, result.output, data


def test_a_suite_attack_honours_how_to_attack_options(tmp_path):
    args = [str(QUICKSTART), "--attack", "inverting-gradients", "--images", "1", "--seeds", "1", "--restarts", "2"]
    code, output, data = _attack(*args, "--dry-run", "--out", str(tmp_path), "--format", "json")
    assert code == 0, output
    summaries = data["summaries"]
    assert {s["attack"] for s in summaries} == {"inverting-gradients"}  # not the suite's idlg
    assert {(s["images"], s["seeds"], s["restarts"]) for s in summaries} == {(1, 1, 2)}


def test_a_suite_attack_refuses_options_that_describe_a_view(tmp_path):
    for option, value in (("--view", "he"), ("--ratio", "0.5"), ("--dataset", "natural"), ("--seed", "3")):
        code, output, _ = _attack(str(QUICKSTART), option, value, "--dry-run", "--out", str(tmp_path))
        assert code == 2 and f"{option} describes a view" in output and "fix:" in output, output
    assert not (tmp_path / "attacks.jsonl").exists()


def test_attacking_a_run_folder_rebuilds_its_recorded_views_and_leaves_its_records_alone(tmp_path):
    run = _run_folder(tmp_path / "run", {"attack": "idlg", "model": "mlp", "images": 2, "seeds": 1, "restarts": 1})
    before = (run / "results.jsonl").read_bytes()
    code, output, data = _attack(str(run), "--dry-run", "--format", "json")
    assert code == 0, output
    summaries = data["summaries"]
    assert [(s["plan"], s["view"]) for s in summaries] == [
        ("raw", "raw"),
        ("host-he/tenseal-ckks", "he"),
        ("offload/tenseal-ckks", "he"),
    ]
    assert {(s["attack"], s["model"], s["images"], s["dataset"]) for s in summaries} == {("idlg", "mlp", 2, "digits")}
    out = Path(data["out"])
    assert out.parent == run and out.name.startswith("attack-") and (out / "attacks.jsonl").exists()
    assert (run / "results.jsonl").read_bytes() == before
    code, output, data = _attack(str(run), "--images", "1", "--attack", "dlg", "--dry-run", "--format", "json")
    assert code == 0 and {(s["attack"], s["images"]) for s in data["summaries"]} == {("dlg", 1)}


def test_a_run_without_privacy_is_attacked_with_defaults_and_says_so(tmp_path):
    run = _run_folder(tmp_path / "run", None)
    code, output, data = _attack(str(run), "--images", "1", "--seeds", "1", "--dry-run", "--format", "json")
    assert code == 0, output
    assert len(data["summaries"]) == 3 and any("no privacy section" in n for n in data["notes"])


def test_a_run_without_privacy_is_attacked_on_the_model_it_trained_and_names_it(tmp_path):
    """Issue #40: the run trained an mlp; the default attack attacked lenet and said only "the defaults"."""
    run = _run_folder(tmp_path / "run", None)
    code, output, data = _attack(str(run), "--images", "1", "--seeds", "1", "--dry-run", "--format", "json")
    assert code == 0, output
    assert data["models"] == ["mlp"] and {s["model"] for s in data["summaries"]} == {"mlp"}
    (note,) = [n for n in data["notes"] if "no privacy section" in n]
    assert "dlg" in note and "on the run's model (mlp)" in note and "best of 4 restart(s) of 300 steps" in note
    code, output, _ = _attack(str(run), "--images", "1", "--seeds", "1", "--dry-run")
    assert code == 0 and "model attacked: mlp" in output


def test_too_few_steps_or_restarts_for_a_defence_are_warned(tmp_path):
    """Issue #40: with --steps 50 --restarts 1 raw scored 0 of 2; such an attack cannot show a defence."""
    run = _run_folder(tmp_path / "run", None)
    args = ["--images", "1", "--seeds", "1", "--dry-run", "--format", "json"]
    code, output, data = _attack(str(run), "--steps", "50", "--restarts", "1", *args)
    assert code == 0, output
    (warning,) = data["warnings"]
    assert "50 steps where its recipe runs 300" in warning and "1 restart" in warning
    code, output, data = _attack(str(run), *args)  # the recipe's steps and the default restarts: no warning
    assert code == 0 and data["warnings"] == []


def test_an_attack_that_recovers_nothing_from_raw_is_said_to_show_no_defence():
    from hebench.inversion.evidence import raw_failed_notes

    failed = {"plan": "raw", "attack": "dlg", "view": "raw", "scores": {"success": {"k": 0, "n": 2}}}
    recovered = {**failed, "scores": {"success": {"k": 1, "n": 2}}}
    protected = {**failed, "plan": "host-he/tenseal-ckks", "view": "he"}
    (note,) = raw_failed_notes([failed, protected])
    assert note.startswith("raw: dlg recovered no image") and "0 of 2" in note
    assert raw_failed_notes([recovered, protected]) == []


def test_a_run_attack_refuses_to_change_what_was_seen(tmp_path):
    run = _run_folder(tmp_path / "run", {"images": 1, "seeds": 1})
    code, output, _ = _attack(str(run), "--set", "training.rounds=9", "--dry-run")
    assert code == 2 and "would change what the run's aggregators saw" in output
    code, output, _ = _attack(str(run), "--view", "selective", "--dry-run")
    assert code == 2 and "--view describes a view" in output
    code, output, _ = _attack(str(run), "--full")
    assert code == 2 and "takes no SUITE or RUN" in output


def test_a_recorded_plan_whose_view_no_longer_matches_is_refused(tmp_path):
    run = _run_folder(tmp_path / "run", {"images": 1, "seeds": 1}, {"host-he/tenseal-ckks": ("raw", 0.0)})
    code, output, _ = _attack(str(run), "--dry-run")
    assert code == 2 and "host-he/tenseal-ckks" in output and "view raw" in output
    consistent = _run_folder(tmp_path / "ok", {"images": 1, "seeds": 1}, {"host-he/tenseal-ckks": ("he", 1.0)})
    assert _attack(str(consistent), "--dry-run", "--format", "json")[0] == 0


def test_an_ad_hoc_option_the_view_would_not_use_is_refused(tmp_path):
    cases = [
        (["--view", "he", "--ratio", "0.5"], "--ratio applies to --view selective"),
        (["--view", "selective", "--mask", "random", "--layers", "fc"], "--layers applies to --mask layers"),
        (["--local-lr", "0.5"], "--local-lr applies with --local-steps"),
    ]
    for args, message in cases:
        code, output, _ = _attack(*args, "--dry-run", "--out", str(tmp_path))
        assert code == 2 and message in output, output
    assert not (tmp_path / "attacks.jsonl").exists()
