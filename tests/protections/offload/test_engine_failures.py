"""Engine failures give clear errors; completed rounds stay; --resume continues."""

from __future__ import annotations

import json
import socket
import ssl
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

from hebench.cli.main import app
from hebench.errors import PartyError
from hebench.net.certs import make_certificates
from hebench.net.stream import dial
from hebench.net.transport import Channel, Message
from hebench.protections.offload.engine import EngineConfig, EngineServer
from hebench.results import read_records
from tests.conftest import INSTALLED

pytestmark = pytest.mark.skipif("tenseal-ckks" not in INSTALLED, reason="TenSEAL not installed")


@pytest.fixture
def engine(tmp_path):
    files = make_certificates(tmp_path / "certs", hosts=2)
    server = EngineServer(EngineConfig(tls=files["engine-0"], timeout_s=10))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server, files
    server.close()


def test_engine_refuses_a_client_without_a_valid_certificate(engine, tmp_path):
    server, files = engine
    strangers = make_certificates(tmp_path / "other-ca", hosts=1)
    with pytest.raises(PartyError, match="TLS handshake"):  # a certificate from another CA
        dial(server.address, tls=strangers["host-0"], authkey=None, peer="engine")
    # trusts the engine, but presents no client certificate: the engine must refuse the session
    context = ssl.create_default_context(cafile=str(files["engine-0"].ca))
    raw = socket.create_connection(server.address, timeout=5)
    with pytest.raises((ssl.SSLError, ConnectionResetError, BrokenPipeError)):
        tls = context.wrap_socket(raw, server_hostname="127.0.0.1")
        tls.sendall(b"\x00" * 8)
        if tls.recv(16) == b"":  # TLS 1.3 reports the refusal on the first read
            raise ConnectionResetError("closed by the engine")
    raw.close()
    for _ in range(50):
        if len(server.errors) >= 2:
            break
        time.sleep(0.1)
    assert len(server.errors) >= 2 and all("refused a peer" in e for e in server.errors)


def test_engine_takes_keys_only_from_the_key_authority(engine):
    server, files = engine
    framed = dial(server.address, tls=files["host-0"], authkey=None, peer="engine")
    ch = Channel(framed, "engine", 5)  # type: ignore[arg-type]
    ch.send(Message("hello", {"role": "key_authority"}))
    with pytest.raises(PartyError, match="refused key delivery"):
        ch.recv()


def test_unreachable_engine_is_a_clear_error():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(PartyError) as info:
        dial(("127.0.0.1", port), tls=None, authkey=b"k", peer="engine 0")
    assert "cannot reach engine 0" in str(info.value) and "hebench engine serve" in info.value.fix


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start_engine(port: int, certs: Path, index: int) -> subprocess.Popen:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "hebench",
            "engine",
            "serve",
            "--listen",
            f"127.0.0.1:{port}",
            "--tls-cert",
            str(certs / f"engine-{index}.pem"),
            "--tls-key",
            str(certs / f"engine-{index}-key.pem"),
            "--tls-ca",
            str(certs / "ca.pem"),
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    assert "engine listening" in proc.stderr.readline()
    return proc


ROUNDS = 40


@pytest.mark.slow
def test_a_remote_engine_killed_mid_run_is_its_clients_dropout_and_the_run_completes(tmp_path):
    """A dead engine is a dead client (#28): client 1's rounds go on without it, the run is not ended."""
    certs = tmp_path / "certs"
    result = CliRunner().invoke(app, ["engine", "certs", str(certs), "--hosts", "2"])
    assert result.exit_code == 0 and (certs / "host-1.pem").exists()
    ports = [_free_port(), _free_port()]
    engines = [_start_engine(p, certs, i) for i, p in enumerate(ports)]
    suite = {
        "name": "remote",
        "data": {"dataset": "digits", "clients": 2},
        "model": {"name": "mlp", "hidden": 4},
        "training": {"rounds": ROUNDS},  # enough that the run is still going when the kill lands
        "configurations": [{"mode": "offload", "adapter": "tenseal-ckks"}],
        "offload": {"engines": [f"127.0.0.1:{p}" for p in ports], "tls_dir": str(certs)},
        "measure": {"timeout_s": 60},
    }
    path, out = tmp_path / "suite.yaml", tmp_path / "out"
    path.write_text(yaml.safe_dump(suite))

    def kill_after_first_round() -> None:
        results = out / "results.jsonl"
        for _ in range(600):
            if results.exists() and read_records(results, kind="round").records:
                engines[1].kill()
                return
            time.sleep(0.1)

    killer = threading.Thread(target=kill_after_first_round, daemon=True)
    killer.start()
    try:
        first = CliRunner().invoke(app, ["run", str(path), "--out", str(out), "--format", "json"])
        killer.join(timeout=5)
        assert first.exit_code == 0, first.output
        assert json.loads(first.stdout)["summary"][0]["rounds_done"] == ROUNDS
        rounds = read_records(out / "results.jsonl", kind="round").records
        assert [r.round for r in rounds] == list(range(ROUNDS))
        lost = [r for r in rounds if r.dropped]
        # lost before its upload arrived (out of the sum), or after it (in the sum: lost while the aggregate went out)
        out_of_sum = [r for r in lost if r.dropped == {"1": "lost"} and (r.skipped or r.arrived == 1)]
        in_sum = [r for r in lost if r.dropped == {"1": "lost_after_upload"} and r.arrived == 2]
        assert lost and len(out_of_sum) + len(in_sum) == len(lost) and len(in_sum) <= 1, lost
        assert not rounds[0].dropped  # the kill lands after the first round
    finally:
        for proc in engines:
            proc.kill()


def test_aggregate_under_another_key_is_a_clear_engine_error():
    """The engine refuses to decrypt ciphertext made under a key it was not given, and tells the host why."""
    from hebench.config import parse_suite
    from hebench.crypto import create_adapter
    from hebench.fl.party import AGGREGATOR_DOOR, KEY_AUTHORITY, engine_door
    from hebench.net.transport import Door, accept
    from hebench.runtime.local.credentials import RunCredentials

    suite = parse_suite(
        {
            "name": "o",
            "data": {"dataset": "digits", "clients": 1},
            "configurations": [{"mode": "offload", "adapter": "tenseal-ckks"}],
        }
    )
    creds = RunCredentials(suite.configurations[0], 1)
    server = EngineServer(EngineConfig(authkey=creds.door(engine_door(0)), timeout_s=10))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    ours, theirs = create_adapter("tenseal-ckks"), create_adapter("tenseal-ckks")
    ours.keygen()
    theirs.keygen()
    ka_key, host_key = creds.of(KEY_AUTHORITY).key(engine_door(0)), creds.of("client-0").key(engine_door(0))
    ka = Channel(dial(server.address, tls=None, authkey=ka_key, peer="engine", party=KEY_AUTHORITY), "engine", 10)  # type: ignore[arg-type]
    ka.send(Message("hello", {"role": "key_authority"}))
    allow = {"first": 0, "end": 1, "values": 4}
    ka.send(Message("keys", {"epoch": 0, "run": "r1", "allow": allow}, (ours.export_keys(secret=True),)))
    aggregator = Door(creds.door(AGGREGATOR_DOOR))
    host = Channel(dial(server.address, tls=None, authkey=host_key, peer="engine", party="client-0"), "engine", 10)  # type: ignore[arg-type]
    host.send(
        Message(
            "hello",
            {
                "role": "host",
                "client": 0,
                "samples": 1,
                "chunk_values": 4096,
                "aggregator": list(aggregator.address),
                "authkey": creds.of("client-0").key(AGGREGATOR_DOOR).hex(),
                "run": "r1",
            },
        )
    )
    agg = accept(aggregator, "engine", 30)
    assert agg.party == "client-0" and agg.recv("hello").meta["client"] == 0
    foreign = theirs.serialize(theirs.encrypt(np.ones(4)))
    chunk = {"round": 0, "epoch": 0, "offset": 0, "values": 4}  # an aggregate streams in chunks (fl/streams.py)
    agg.send(Message("aggregate_chunk", chunk, (foreign,)))
    with pytest.raises(PartyError, match="another key"):
        host.recv("result")
    server.close()
    aggregator.close()
