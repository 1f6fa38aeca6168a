"""On Flower's deployment engine, a SuperNode killed mid-run is its client's dropout, as a killed client process is
on the local runtime (tests/faults/test_lost_clients.py): the run completes every round without it, later rounds
record it dropped at phase 'lost', and a party_lost record says why. Flower notices a dead SuperNode only once its
heartbeat is overdue (HEARTBEAT_PATIENCE x 30 s): the round it died in waits for that."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from hebench.cli.main import app
from hebench.results import read_records

pytest.importorskip("flwr", reason="the hebench[flower] extra is not installed")
pytestmark = pytest.mark.slow  # a deployment run with a SuperNode killed

from hebench.runtime.flower.federation import LocalFederation  # noqa: E402

ROUNDS = 4  # the kill lands after round 0; the round it lands in waits for Flower to see the node gone
SUITE = {
    "name": "flower-lost",
    "data": {"dataset": "digits", "clients": 3},
    "model": {"name": "mlp", "hidden": 4},
    "training": {"rounds": ROUNDS},
    "configurations": [{"mode": "raw"}],
    "measure": {"timeout_s": 180},  # above Flower's 60 s before a silent node is unavailable
}


@pytest.fixture
def supernode_pids(monkeypatch) -> dict[int, int]:
    """Partition -> pid of every SuperNode a loopback federation starts."""
    pids: dict[int, int] = {}
    real = LocalFederation.start_supernode

    def start(self, index, key=None, name=None):
        proc, log = real(self, index, key, name)
        pids[index] = proc.pid
        return proc, log

    monkeypatch.setattr(LocalFederation, "start_supernode", start)
    return pids


def _rounds(out: Path) -> list:
    results = out / "results.jsonl"
    return read_records(results, kind="round").records if results.exists() else []


def test_a_killed_supernode_is_a_dropout_and_the_run_completes(tmp_path, supernode_pids):
    path, out = tmp_path / "suite.yaml", tmp_path / "run"
    path.write_text(yaml.safe_dump(SUITE))
    killed: list[int] = []

    def kill() -> None:  # SuperNode 1, once round 0 is recorded
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            if _rounds(out) and 1 in supernode_pids:
                os.kill(supernode_pids[1], signal.SIGKILL)
                killed.append(len(_rounds(out)))
                return
            time.sleep(0.1)

    killer = threading.Thread(target=kill, daemon=True)
    killer.start()
    args = ["run", str(path), "--engine", "flower", "--out", str(out), "--no-report", "--format", "json"]
    result = CliRunner().invoke(app, args)
    killer.join(timeout=5)
    assert killed and killed[0] < ROUNDS, "the run finished before the SuperNode could be killed"
    assert result.exit_code == 0, (result.output, result.exception)
    assert json.loads(result.stdout)["summary"][0]["rounds_done"] == ROUNDS
    rounds = sorted(_rounds(out), key=lambda r: r.round)
    assert [r.round for r in rounds] == list(range(ROUNDS))
    assert rounds[0].dropped in (None, {})  # before the kill nobody left
    last = rounds[-1]  # long after the kill: client 1 is out, the others carry on
    assert last.dropped == {"1": "lost"} and last.arrived == 2 and not last.skipped
    assert all(r.accuracy is not None for r in rounds)  # client 0 evaluated every global model
    lost = read_records(out / "results.jsonl", kind="party_lost").records
    assert [r.role for r in lost] == ["client-1"] and "SuperNode" in lost[0].problem
