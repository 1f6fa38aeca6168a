"""A client process killed (or crashed) mid-run is a dropout: its rounds complete without it, the run goes on;
the evaluating client 0 and the server-side parties still end the run (tests/runtime/test_party_faults.py)."""

from __future__ import annotations

import json
import os
import re
import signal
import threading
import time
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from hebench.cli.main import app
from hebench.results import read_records

pytestmark = pytest.mark.slow  # end-to-end runs with a client killed

ROUNDS = 12  # enough that the run is still going when the kill lands
SUITE = {
    "name": "lost",
    "data": {"dataset": "digits", "clients": 3},
    "model": {"name": "mlp", "hidden": 4},
    "training": {"rounds": ROUNDS, "key_rotation_rounds": 2},  # the key authority pushes to the dead client too
    "runtime": {"hosting": "process"},
    "measure": {"timeout_s": 60},
}


def _rounds(out: Path) -> list:
    results = out / "results.jsonl"
    return read_records(results, kind="round").records if results.exists() else []


def _kill_after_first_round(out: Path, pids: dict[str, int], name: str) -> tuple[threading.Thread, list[int]]:
    """A started thread that SIGKILLs party ``name`` once a round is recorded; the list gets the rounds done then."""
    killed: list[int] = []

    def kill() -> None:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            if _rounds(out) and name in pids:
                os.kill(pids[name], signal.SIGKILL)
                killed.append(len(_rounds(out)))
                return
            time.sleep(0.05)

    killer = threading.Thread(target=kill, daemon=True)
    killer.start()
    return killer, killed


QUANTISED = 3 * 16 / 2**22 / 0.3  # secagg: 3 summands of step 2 * 8 / 2**22, over the survivors' weight (> 0.3)


@pytest.mark.parametrize(
    ("mode", "bound"),
    [
        ({"mode": "raw"}, 1e-6),
        ({"mode": "host-he", "adapter": "tenseal-ckks"}, 1e-6),
        ({"mode": "secagg"}, QUANTISED),  # lost at whatever stage the kill lands (tests/faults/test_secagg_lost_stages)
        ({"mode": "secret-sharing"}, QUANTISED),  # 24-bit levels: finer than secagg's
        ({"mode": "decryptor-he", "adapter": "tenseal-ckks"}, 1e-6),
    ],
    ids=["raw", "host-he", "secagg", "secret-sharing", "decryptor-he"],
)
def test_a_killed_client_is_a_dropout_and_the_run_completes(tmp_path, party_pids, mode, bound):
    path, out = tmp_path / "suite.yaml", tmp_path / "out"
    path.write_text(yaml.safe_dump({**SUITE, "configurations": [mode]}))
    killer, killed = _kill_after_first_round(out, party_pids, "client-1")
    result = CliRunner().invoke(app, ["run", str(path), "--out", str(out), "--no-report", "--format", "json"])
    killer.join(timeout=5)
    assert killed, "the run finished before the client could be killed"
    assert result.exit_code == 0, (result.output, result.exception)
    assert json.loads(result.stdout)["summary"][0]["rounds_done"] == ROUNDS
    rounds = sorted(_rounds(out), key=lambda r: r.round)
    assert [r.round for r in rounds] == list(range(ROUNDS))
    checked = [r for r in rounds if r.max_abs_error is not None]  # not the round a killed client's oracle copy died in
    assert len(checked) >= ROUNDS - 1 and all(r.max_abs_error < bound for r in checked)
    last = rounds[-1]  # long after the kill: client 1 is out, the others carry on
    assert last.dropped == {"1": "lost"} and last.arrived == 2 and not last.skipped
    assert rounds[0].dropped in (None, {})  # before the kill nobody left
    aggregator = [r for r in read_records(out / "results.jsonl", kind="party_round").records if r.role == "aggregator"][
        -1
    ]
    assert set(aggregator.arrived or ()) == {0, 2} and set(aggregator.weights or {}) == {"0", "2"}
    lost = read_records(out / "results.jsonl", kind="party_lost").records  # why it left is kept, not absorbed
    assert [r.role for r in lost] == ["client-1"] and "exited with code -9" in lost[0].problem


def test_a_killed_share_holder_fails_the_run_with_a_record_naming_it(tmp_path, party_pids):
    """The policy for a lost share holder: the round fails and the run ends (its shares cannot be rebuilt);
    the run_failed record and the one-line error name it, and earlier rounds are kept."""
    path, out = tmp_path / "suite.yaml", tmp_path / "out"
    suite = {**SUITE, "configurations": [{"mode": "secret-sharing", "params": {"aggregators": 3}}]}
    path.write_text(yaml.safe_dump(suite))
    killer, killed = _kill_after_first_round(out, party_pids, "aggregator-1")
    result = CliRunner().invoke(app, ["run", str(path), "--out", str(out), "--no-report"])
    killer.join(timeout=5)
    assert killed, "the run finished before the share holder could be killed"
    assert result.exit_code == 4, (result.output, result.exception)
    assert re.search(r"aggregator[- ]1\b", result.output) and "fix:" in result.output  # the holder, named
    failed = read_records(out / "results.jsonl", kind="run_failed").records
    assert len(failed) == 1 and re.search(r"aggregator[- ]1\b", failed[0].problem) and failed[0].round is not None
    assert _rounds(out)  # the rounds before it are kept


def test_a_killed_share_holder_with_the_skip_policy_skips_its_round_and_the_suite_goes_on(tmp_path, party_pids):
    """``on_holder_loss: skip``: the round the holder was lost in is recorded as skipped, naming it; that
    configuration ends there (the holder is gone for good), and the suite's next configuration still runs."""
    path, out = tmp_path / "suite.yaml", tmp_path / "out"
    sharing = {"name": "sharing", "mode": "secret-sharing", "params": {"aggregators": 3, "on_holder_loss": "skip"}}
    path.write_text(yaml.safe_dump({**SUITE, "configurations": [sharing, {"name": "raw", "mode": "raw"}]}))
    killer, killed = _kill_after_first_round(out, party_pids, "aggregator-1")
    result = CliRunner().invoke(app, ["run", str(path), "--out", str(out), "--no-report"])
    killer.join(timeout=5)
    assert killed, "the run finished before the share holder could be killed"
    assert result.exit_code == 0, (result.output, result.exception)
    assert not read_records(out / "results.jsonl", kind="run_failed").records
    rounds = sorted((r for r in _rounds(out) if r.config == "sharing"), key=lambda r: r.round)
    assert [r.round for r in rounds] == list(range(len(rounds))) and len(rounds) < ROUNDS
    last = rounds[-1]
    assert last.skipped and re.search(r"aggregator-1\b", last.skip_reason or "") and last.max_abs_error is None
    assert all(not r.skipped for r in rounds[:-1])  # the rounds before it are kept
    assert len([r for r in _rounds(out) if r.config == "raw"]) == ROUNDS
