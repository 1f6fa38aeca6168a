"""A server-side party process killed mid-run: the run fails with that party named, finished rounds stay,
--resume finishes. (A killed client is a dropout of its round: tests/faults/test_lost_clients.py.)

Bounded: raw mode (the key authority still serves a key set per round with key rotation every round), digits,
a 4-unit MLP, 2 clients; every wait has a limit.
"""

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
from hebench.report.build import build_report
from hebench.results import read_records

pytestmark = pytest.mark.slow  # end-to-end runs with a party killed

ROUNDS = 30  # enough that the run is still going when the kill lands
SUITE = {
    "name": "faults",
    "data": {"dataset": "digits", "clients": 2},
    "model": {"name": "mlp", "hidden": 4},
    "training": {"rounds": ROUNDS, "key_rotation_rounds": 1},
    "configurations": [{"mode": "raw"}],
    "measure": {"timeout_s": 60},
}
# what the failure message must name, per killed process
NAMED = {"aggregator": "aggregator", "key_authority": "key authority|key_authority"}


def _rounds_done(out: Path) -> list[int]:
    results = out / "results.jsonl"
    if not results.exists():
        return []
    return [r.round for r in read_records(results, kind="round").records]


@pytest.mark.parametrize("victim", ["aggregator", "key_authority"])
def test_killed_party_fails_the_run_cleanly_and_resume_finishes(tmp_path, party_pids, victim):
    path, out = tmp_path / "suite.yaml", tmp_path / "out"
    path.write_text(yaml.safe_dump(SUITE))
    killed: list[int] = []

    def kill_after_first_round() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if _rounds_done(out) and victim in party_pids:
                os.kill(party_pids[victim], signal.SIGKILL)
                killed.append(party_pids[victim])
                return
            time.sleep(0.05)

    killer = threading.Thread(target=kill_after_first_round, daemon=True)
    killer.start()
    first = CliRunner().invoke(app, ["run", str(path), "--out", str(out)])
    killer.join(timeout=5)
    assert killed, "the run finished before the party could be killed"
    assert first.exit_code == 4, first.output
    assert "error:" in first.output and "fix:" in first.output and "Traceback" not in first.output
    assert re.search(NAMED[victim], first.output), first.output
    done = _rounds_done(out)
    assert done and done == list(range(len(done))) and len(done) < ROUNDS  # earlier rounds kept, in order
    failed = read_records(out / "results.jsonl", kind="run_failed").records
    assert len(failed) == 1 and failed[0].config == "raw" and failed[0].error == "PartyError"
    assert "FAILED" in build_report([out], tmp_path / "failed.html").read_text()

    second = CliRunner().invoke(app, ["run", str(path), "--out", str(out), "--resume", "--format", "json"])
    assert second.exit_code == 0, second.output
    assert json.loads(second.stdout)["summary"][0]["rounds_done"] == ROUNDS
    assert sorted(set(_rounds_done(out))) == list(range(ROUNDS))
    assert "FAILED" not in build_report([out], tmp_path / "resumed.html").read_text()  # the resume finished it
