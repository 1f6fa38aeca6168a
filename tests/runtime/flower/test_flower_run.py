"""hebench on Flower's deployment engine, end to end: a loopback federation (1 SuperLink, 3 SuperNodes,
TLS, node authentication, an offload engine per node) started with `hebench flower up`, suites run on it
with `hebench run --engine flower`, and the security invariants checked as scans of what the server received.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

from hebench.analysis.summary import summarize_run
from hebench.cli.main import app
from hebench.config import parse_suite
from hebench.crypto import create_adapter, load_adapter
from hebench.crypto.base import CIPHERTEXT_MAGIC
from hebench.net.transport import read_transcript
from hebench.results import read_records
from hebench.runtime.runner import Runner
from tests.conftest import INSTALLED
from tests.processes import descendants, end_tree, wait_gone

pytest.importorskip("flwr", reason="the hebench[flower] extra is not installed")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif("tenseal-ckks" not in INSTALLED, reason="TenSEAL not installed"),
]

from hebench.runtime.flower.codec import CIPHER_STYPE, PLAIN_STYPE, content_from_bytes  # noqa: E402
from hebench.runtime.flower.federation import Federation, LocalFederation, write_node_keys  # noqa: E402

HOST_HE, OFFLOAD = "host-he/tenseal-ckks", "offload/tenseal-ckks"
SUITE = {
    "name": "flower-e2e",
    "seed": 5,
    "data": {"dataset": "digits", "clients": 3},
    "model": {"name": "mlp", "hidden": 8},
    "training": {"rounds": 2, "lr": 0.1},
    "configurations": [{"mode": "host-he", "adapter": "tenseal-ckks"}, {"mode": "offload", "adapter": "tenseal-ckks"}],
    "measure": {"transcripts": True, "timeout_s": 180},
}


def _wait_for(path: Path, proc: subprocess.Popen, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if path.exists():
            return
        assert proc.poll() is None, f"hebench flower up exited: {proc.stdout.read() if proc.stdout else ''}"
        time.sleep(0.5)
    raise AssertionError(f"{path} did not appear")


@pytest.fixture(scope="module")
def federation(tmp_path_factory):
    """`hebench flower up` as a user runs it, stopped with Ctrl-C at the end; whatever it left (a failed test, a
    stop that failed) is killed then."""
    folder = tmp_path_factory.mktemp("flower") / "federation"
    argv = [sys.executable, "-m", "hebench", "flower", "up", str(folder), "--nodes", "3", "--auth", "--engines"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    started: list = []
    try:
        _wait_for(folder / "logs" / "supernode-2.log", proc)
        _wait_for_log(folder / "logs" / "superlink.log", "Activated node_id", count=3)
        started += descendants(proc.pid)
        yield folder, proc
    finally:
        end_tree(proc, signal.SIGINT, also=started)


def _wait_for_log(log: Path, text: str, count: int = 1, timeout_s: float = 120) -> str:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        content = log.read_text(errors="replace") if log.exists() else ""
        if content.count(text) >= count:
            return content
        time.sleep(0.5)
    raise AssertionError(f"'{text}' x{count} not in {log}: {content[-2000:]}")


@pytest.fixture(scope="module")
def run(federation, tmp_path_factory) -> Path:
    folder, _ = federation
    out = tmp_path_factory.mktemp("flower-run")
    suite_file = out.parent / "flower-e2e.yaml"
    suite_file.write_text(yaml.safe_dump(SUITE))
    args = ["run", str(suite_file), "--engine", "flower", "--federation", str(folder), "--out", str(out / "run")]
    result = CliRunner().invoke(app, [*args, "--format", "json"])
    assert result.exit_code == 0, result.output
    return out / "run"


def records(run: Path) -> list[dict]:
    return [r.to_json() for r in read_records(run / "results.jsonl").records]


def test_every_round_completes_with_flower_marked_records(run):
    rows = {r.config: r.to_json() for r in summarize_run(read_records(run / "results.jsonl").records)}
    assert set(rows) == {HOST_HE, OFFLOAD}
    for row in rows.values():
        assert row["rounds_done"] == 2 and row["runtime"] == "flower"
        assert row["round_wall_s"] is None and row["flower_round_wall_s"] > 0  # never mixed with local wall times
        assert row["client_cpu_s_per_round"] > 0 and row["upload_bytes_per_client_round"] > 0
        # each message's ClientApp process: start-up and imports on top of the measured phases
        assert row["flower_process_cpu_s_per_round"] > row["client_cpu_s_per_round"]
    clients = [r for r in records(run) if r["kind"] == "party_round" and r["role"] == "client"]
    assert len(clients) == 2 * 2 * 3 and all(r["runtime"] == "flower" for r in clients)
    assert all({"train", "encrypt", "serialize", "decrypt"} <= set(r["phases"]) for r in clients if "engine" not in r)
    assert rows[OFFLOAD]["engine_cpu_s_per_round"] > 0 and rows[OFFLOAD]["host_engine_bytes_per_round"] > 0


def test_the_global_model_is_plaintext_fedavg_of_the_same_updates(run):
    precision = create_adapter("tenseal-ckks", {}).info().precision
    rounds = [r for r in records(run) if r["kind"] == "round"]
    assert len(rounds) == 4
    assert all(0 < r["max_abs_error"] <= precision for r in rounds), [r["max_abs_error"] for r in rounds]


def test_flower_trains_the_same_model_as_the_local_runner(run, tmp_path):
    local = Runner(parse_suite({**SUITE, "configurations": SUITE["configurations"][:1]}), tmp_path).run()
    want = {r.round: r.accuracy for r in read_records(local, kind="round").records}
    got = {r["round"]: r["accuracy"] for r in records(run) if r["kind"] == "round" and r["config"] == HOST_HE}
    assert got == pytest.approx(want, abs=0.01)
    final = np.load(run / "checkpoints" / "host-he_tenseal-ckks" / "round-1.npy")
    assert np.allclose(final, np.load(tmp_path / "checkpoints" / "host-he_tenseal-ckks" / "round-1.npy"), atol=1e-4)


def _secret(run: Path, label: str) -> bytes:
    folder = run / "transcripts" / label
    keys = [m for m in read_transcript(folder / "client-0-keys.bin") if m.kind == "keys"]
    adapter = load_adapter(keys[0].parts[0])
    assert adapter.has_secret_key
    return adapter.secret_key_bytes()


def test_the_server_never_holds_or_receives_the_secret_key(run):
    folder = run / "transcripts" / "host-he_tenseal-ckks"
    secret = _secret(run, "host-he_tenseal-ckks")
    keys = read_transcript(folder / "aggregator-keys.bin")
    assert [m.kind for m in keys] == ["keys"] and not load_adapter(keys[0].parts[0]).has_secret_key
    received = (folder / "aggregator-keys.bin").read_bytes() + (folder / "aggregator-from-flower.bin").read_bytes()
    windows = [secret[i : i + 32] for i in range(0, len(secret) - 32, max(len(secret) // 8, 1))]
    assert secret not in received and not any(w in received for w in windows)
    assert secret in (folder / "client-0-keys.bin").read_bytes()  # the scan finds the key where it does travel
    closing = [r for r in records(run) if r["kind"] == "flower_run"]
    assert len(closing) == 2 and not any(r["holds_secret_key"] for r in closing)


def _train_replies(run: Path, label: str) -> list:
    replies = read_transcript(run / "transcripts" / label / "aggregator-from-flower.bin")
    return [content_from_bytes(m.parts[0]) for m in replies if m.meta["type"] == "train"]


@pytest.mark.parametrize("label", ["host-he_tenseal-ckks", "offload_tenseal-ckks"])
def test_every_update_the_server_receives_is_ciphertext(run, label):
    replies = _train_replies(run, label)
    assert len(replies) == 2 * 3
    for content in replies:
        arrays = content.array_records["arrays"]
        assert arrays and all(a.stype == CIPHER_STYPE and a.data.startswith(CIPHERTEXT_MAGIC) for a in arrays.values())
        header = json.loads(arrays["c0"].data[8 : 8 + int.from_bytes(arrays["c0"].data[4:8], "big")])
        assert header["adapter"] == "tenseal-ckks"


def test_in_offload_mode_no_flower_client_ever_holds_a_key(run):
    folder = run / "transcripts" / "offload_tenseal-ckks"
    received = [m for p in folder.glob("client-*-keys.bin") for m in read_transcript(p)]
    assert not any(m.kind == "keys" for m in received)
    keygen = [r for r in records(run) if r["kind"] == "keygen" and r["config"] == OFFLOAD]
    assert keygen and keygen[0]["holders"] == 3  # the engines
    with_engine = [r for r in records(run) if r["kind"] == "party_round" and r["config"] == OFFLOAD and "engine" in r]
    assert len(with_engine) == 6 and all("encrypt" in r["engine"]["phases"] for r in with_engine)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_supernode_without_registered_credentials_is_refused(federation, tmp_path):
    folder, _ = federation
    fed = Federation.load(folder)
    intruders = LocalFederation(fed)
    try:
        key, _ = write_node_keys(tmp_path, 7)  # a valid key pair that was never registered
        unregistered, log = intruders.start_supernode(0, key, name="unregistered")
        keyless, keyless_log = intruders.start_supernode(1, None, name="keyless")
        assert unregistered.wait(timeout=120) != 0 and keyless.wait(timeout=120) != 0
        assert "Failed to activate SuperNode" in log.read_text()
        assert "SuperNode authentication is enabled" in keyless_log.read_text()
    finally:
        intruders.stop()
    _wait_for_log(folder / "logs" / "superlink.log", "No SuperNode found with the given public key")


def test_flower_up_stops_everything_on_ctrl_c(federation):
    folder, proc = federation
    superlink = Federation.load(folder).superlink
    host, port = superlink.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5):
        pass
    started = descendants(proc.pid)
    assert len(started) >= 7  # the SuperLink, 3 engines, 3 SuperNodes (and what they started)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=60) == 0
    assert not wait_gone(started, 5.0), "processes outlived hebench flower up"
    with pytest.raises(OSError):
        socket.create_connection((host, int(port)), timeout=5).close()


def test_default_engine_flower_starts_its_own_loopback_federation(tmp_path):
    """Without --federation: a TLS loopback federation for the run; raw mode (the scan's control) and selective."""
    suite = {
        "name": "flower-default",
        "data": {"dataset": "digits", "clients": 2},
        "model": {"name": "mlp", "hidden": 4},
        "training": {"rounds": 1, "lr": 0.1},
        "configurations": [
            {"mode": "raw"},
            {"mode": "host-he", "adapter": "tenseal-ckks", "selective": {"mask": "sensitivity", "ratio": 0.1}},
        ],
        "measure": {"transcripts": True, "timeout_s": 180},
    }
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(suite))
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["run", str(tmp_path / "s.yaml"), "--engine", "flower", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert json.loads((out / "flower-federation" / "federation.json").read_text())["root_certificates"]
    rounds = [r for r in records(out) if r["kind"] == "round"]
    assert len(rounds) == 2 and all(r["max_abs_error"] < 1e-4 for r in rounds)
    raw = _train_replies(out, "raw")
    assert raw and all(a.stype == PLAIN_STYPE for c in raw for a in c.array_records["arrays"].values())
    selective = _train_replies(out, "host-he_tenseal-ckks_sel-sensitivity-0.1")
    kinds = {a.stype for c in selective for a in c.array_records["arrays"].values()}
    assert kinds == {CIPHER_STYPE, PLAIN_STYPE}  # the sensitive 10 % encrypted, the rest in the clear
    agreed = [r for r in records(out) if r["kind"] == "mask_agreement" and r.get("role") == "client"]
    assert len(agreed) == 2 and len({r["mask_sha256"] for r in agreed}) == 1
    assert all(0.05 < r["encrypted_fraction"] < 0.15 for r in agreed)


def test_run_on_flower_refuses_resume_and_a_mismatched_federation(federation, tmp_path):
    folder, _ = federation
    (tmp_path / "s.yaml").write_text(yaml.safe_dump({**SUITE, "data": {"dataset": "digits", "clients": 2}}))
    args = ["run", str(tmp_path / "s.yaml"), "--engine", "flower", "--out", str(tmp_path / "o")]
    result = CliRunner().invoke(app, [*args, "--federation", str(folder)])
    assert result.exit_code != 0 and "3 SuperNodes" in result.output and "data.clients=3" in result.output
    result = CliRunner().invoke(app, [*args, "--resume"])
    assert result.exit_code != 0 and "--resume" in result.output
    result = CliRunner().invoke(app, ["run", str(tmp_path / "s.yaml"), "--federation", str(folder)])
    assert result.exit_code != 0 and "--engine flower" in result.output
    assert os.path.exists(folder / "federation.json")
