"""`hebench flower up` ends every process it started however it is stopped (SIGTERM, SIGHUP, Ctrl-C, Ctrl-C
with SIGINT inherited ignored as in any background job of a non-interactive shell), and finds Flower's
executables beside its interpreter when its environment is not activated."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from hebench.runtime.flower.federation import Federation, LocalFederation
from tests.processes import alive, descendants, end_tree, wait_gone

ROOT = Path(__file__).resolve().parents[3]
SCRIPTS = str(Path(sys.executable).parent)


def test_flower_processes_find_the_scripts_beside_this_interpreter_first(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", f"/usr/bin{os.pathsep}{SCRIPTS}{os.pathsep}/bin")
    fed = Federation(str(tmp_path), "127.0.0.1:1", None, 1, str(tmp_path / "key"))
    path = fed.env()["PATH"].split(os.pathsep)
    assert path == [SCRIPTS, "/usr/bin", "/bin"]


def test_stop_ends_each_process_group_with_sigkill_after_one_grace_period(tmp_path):
    """A process that ignores SIGTERM is killed after the grace period; so is what a process that did exit left
    in its group (here a child that ignores SIGTERM)."""
    local = LocalFederation(Federation(str(tmp_path), "127.0.0.1:1", None, 1, str(tmp_path / "key")))
    started: list = []
    try:
        stubborn, _ = local.spawn("stubborn", ["sh", "-c", "trap '' TERM; sleep 300 & wait"], dict(os.environ))
        leaving = f"(trap '' TERM; exec sleep 300) & echo $! > {tmp_path}/child; wait"
        parent, _ = local.spawn("parent", ["sh", "-c", leaving], dict(os.environ))
        polite, _ = local.spawn("polite", ["sleep", "300"], dict(os.environ))
        child_file = tmp_path / "child"
        deadline = time.monotonic() + 30
        while not descendants(stubborn.pid) or not (child_file.exists() and child_file.read_text().strip()):
            assert time.monotonic() < deadline, "the shells did not start their children"
            time.sleep(0.1)
        child = int(child_file.read_text())
        started += [p for p in descendants(os.getpid()) if p.pid in {stubborn.pid, parent.pid, polite.pid, child}]
        started += descendants(stubborn.pid)
        assert len(started) == 5
        local.stop(grace_s=1.0)
        assert stubborn.returncode == -signal.SIGKILL
        assert parent.returncode == -signal.SIGTERM and polite.returncode == -signal.SIGTERM
        left = wait_gone(started, 5.0)
        assert not left, f"outlived stop(): {[' '.join(p.cmdline()) for p in left]}"
    finally:  # whatever the test found, nothing it started outlives it
        for _, proc in local.procs:
            end_tree(proc, signal.SIGKILL, grace_s=0)
        for proc in alive(started):
            proc.kill()


_STOPPED = textwrap.dedent(
    """
    import os, signal, sys, time
    from hebench.cli.signals import Stopped, stop_signals_raise
    try:
        with stop_signals_raise():
            print("ready", flush=True)
            time.sleep(60)
    except Stopped as stopped:
        print("stopped by", stopped.signal_name, flush=True)
    print("SIGINT after:", signal.getsignal(signal.SIGINT) == signal.SIG_IGN, flush=True)
    """
)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=lambda s: s.name)
def test_every_stop_signal_raises_even_sigint_inherited_ignored(signum):
    proc = subprocess.Popen(
        [sys.executable, "-c", _STOPPED],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),  # as a background job starts
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        proc.send_signal(signum)
        out, _ = proc.communicate(timeout=30)
    finally:
        end_tree(proc, signal.SIGKILL, grace_s=0)
    assert f"stopped by {signal.Signals(signum).name}" in out
    assert "SIGINT after: True" in out  # the inherited disposition is back once the block is left
    assert proc.returncode == 0


def _flower_up(folder: Path, ignore_sigint: bool) -> subprocess.Popen:
    """`hebench flower up` run by the interpreter's full path with a PATH that lacks its scripts folder (an
    environment not activated), 2 SuperNodes with an engine each; returns once both SuperNodes are active."""
    argv = [sys.executable, "-m", "hebench", "flower", "up", str(folder), "--nodes", "2", "--engines"]
    path = os.environ.get("PATH", "").split(os.pathsep)
    bare = os.pathsep.join(p for p in path if p and p != SCRIPTS and not (Path(p) / "flower-superexec").exists())
    proc = subprocess.Popen(
        argv,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
        cwd=ROOT,
        env={**os.environ, "PATH": bare or "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
        preexec_fn=(lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if ignore_sigint else None,
    )
    log = folder / "logs" / "superlink.log"
    deadline = time.monotonic() + 180
    while (log.read_text(errors="replace") if log.exists() else "").count("Activated node_id") < 2:
        if proc.poll() is not None or time.monotonic() > deadline:
            end_tree(proc, signal.SIGKILL, grace_s=0)
            logs = "\n".join(f"{p.name}: {p.read_text(errors='replace')[-600:]}" for p in folder.glob("logs/*.log"))
            raise AssertionError(f"the federation did not come up (exit {proc.returncode}):\n{logs}")
        time.sleep(0.5)
    return proc


@pytest.mark.slow
@pytest.mark.parametrize(
    ("signum", "ignore_sigint", "code"),
    [(signal.SIGTERM, False, 0), (signal.SIGINT, True, 0), (signal.SIGKILL, False, -signal.SIGKILL)],
    ids=["SIGTERM", "SIGINT-ignored", "SIGKILL"],  # SIGKILL: no stop() can run; the kernel's death signal does it
)
def test_flower_up_stopped_by_a_signal_ends_the_whole_federation(tmp_path, signum, ignore_sigint, code):
    pytest.importorskip("flwr", reason="the hebench[flower] extra is not installed")
    proc = _flower_up(tmp_path / "federation", ignore_sigint)
    started = descendants(proc.pid)
    try:
        names = " ".join(" ".join(p.cmdline()) for p in alive(started))
        assert names.count("flower-supernode") == 2 and names.count("engine serve") == 2
        assert "flower-superlink" in names and "flower-superexec" in names  # found beside the interpreter
        proc.send_signal(signum)
        assert proc.wait(timeout=60) == code
        left = wait_gone(started, 5.0 if code == 0 else 30.0)  # stop()'s grace period was spent in wait() above;
        # after SIGKILL, what Flower's processes started sees its parent gone within its own polling period
        assert not left, f"outlived hebench flower up: {[' '.join(p.cmdline()) for p in left]}"
    finally:
        end_tree(proc, signal.SIGKILL, grace_s=0, also=started)
