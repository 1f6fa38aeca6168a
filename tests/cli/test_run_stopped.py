"""`hebench run` stopped by SIGTERM or SIGHUP (a service manager, a CI timeout, a closed terminal) ends as Ctrl-C
does: every party it started is gone, the rounds already done are kept and the failure record names the signal."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.processes import descendants, end_tree, wait_gone

ROOT = Path(__file__).resolve().parents[2]
SUITE = """
name: stopped
data: {dataset: digits, clients: 2}
model: {name: mlp, hidden: 16}
training: {rounds: 200, local_epochs: 1, batch_size: 32, lr: 0.1}
configurations:
  - {mode: raw}
"""


def _records(results: Path) -> list[dict]:
    """The complete lines of a results file being written."""
    text = results.read_text() if results.exists() else ""
    return [json.loads(line) for line in text.splitlines(keepends=True) if line.endswith("\n") and line.strip()]


@pytest.mark.slow
def test_a_run_stopped_by_a_signal_stops_its_parties_and_keeps_its_rounds(tmp_path, signum=signal.SIGTERM):
    """SIGTERM here; SIGHUP and SIGINT take the same handler (``hebench.cli.signals.STOP_SIGNALS``)."""
    suite = tmp_path / "stopped.yaml"
    suite.write_text(SUITE)
    out = tmp_path / "run"
    argv = [sys.executable, "-m", "hebench", "run", str(suite), "--out", str(out), "--no-report"]
    proc = subprocess.Popen(
        argv, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    results = out / "results.jsonl"
    try:
        deadline = time.monotonic() + 180
        while not [r for r in _records(results) if r.get("kind") == "round"]:  # a round is done
            assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read().decode()[-2000:]
            time.sleep(0.2)
        started = descendants(proc.pid)
        assert started  # the parties run in their own processes
        proc.send_signal(signum)
        code = proc.wait(timeout=60)
        text = proc.stdout.read().decode()
        assert code == 130, text[-2000:]
        assert "interrupted" in text
        assert not wait_gone(started, 10.0)
    finally:
        end_tree(proc, signal.SIGKILL, grace_s=0)
    records = _records(results)
    failed = [r for r in records if r.get("kind") == "run_failed"]
    assert len(failed) == 1 and signal.Signals(signum).name in failed[0]["problem"], failed
    assert any(r.get("kind") == "round" for r in records)  # what was done is kept
