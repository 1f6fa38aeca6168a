"""Engines and their certificates: engine i serves host i only, a host checks it reached its own engine,
a run keeps no CA key, and an engine the local runtime started ends when told (no 10 s wait per engine)."""

from __future__ import annotations

import multiprocessing as mp
import threading
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from typer.testing import CliRunner

from hebench.cli.main import app
from hebench.config import parse_suite
from hebench.crypto import create_adapter
from hebench.errors import PartyError
from hebench.net.certs import CA_KEY, make_certificates, make_party_certificates
from hebench.net.stream import dial
from hebench.net.transport import Channel, Message
from hebench.protections.offload.engine import STOP, EngineConfig, EngineServer, local_engine_main
from hebench.protections.offload.link import engine_names
from hebench.runtime.base import Started
from hebench.runtime.local.processes import party_certificates, stop_parties


@pytest.fixture
def engine_0(tmp_path):
    files = make_certificates(tmp_path / "certs", hosts=2)
    server = EngineServer(EngineConfig(tls=files["engine-0"], timeout_s=10))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server, files
    server.close()


def _service(server: EngineServer, files, host: str) -> Channel:
    framed = dial(server.address, tls=files[host], authkey=None, peer="engine", retry_s=0)
    channel = Channel(framed, "engine", 10)  # type: ignore[arg-type]
    channel.send(Message("hello", {"role": "service", "client": int(host[-1]), "run": "r1"}))
    return channel


def test_an_engine_serves_only_its_own_host(engine_0):
    server, files = engine_0
    # the key authority delivers a key set; host 0 gets ciphertext back from its engine
    keys = create_adapter("plain")
    keys.keygen()
    ka = Channel(dial(server.address, tls=files["key-authority"], authkey=None, peer="engine"), "engine", 10)  # type: ignore[arg-type]
    ka.send(Message("hello", {"role": "key_authority"}))
    ka.send(Message("keys", {"epoch": 0, "run": "r1"}, (keys.export_keys(secret=True),)))
    own = _service(server, files, "host-0")
    own.send(Message("encrypt", {"epoch": 0}, (np.ones(4, "<f4").tobytes(),)))
    assert own.recv("ciphertexts").parts
    # host 1's certificate, from the same CA, is refused a session at engine 0
    other = _service(server, files, "host-1")
    with pytest.raises(PartyError, match="refused a session from 'hebench-host-1'") as err:
        other.recv()
    assert "serves only hebench-host-0" in err.value.fix
    for channel in (own, ka):
        channel.send(Message("done"))


def test_a_host_refuses_an_engine_that_is_not_its_own(engine_0):
    server, files = engine_0
    with pytest.raises(PartyError, match="certificate for 'hebench-engine-0'"):
        dial(server.address, tls=files["host-1"], authkey=None, peer="engine 1", server_names=engine_names(1))


def test_engine_certificates_are_one_per_host_and_bound_to_a_side(tmp_path):
    from cryptography import x509

    files = make_certificates(tmp_path, hosts=2)
    assert sorted(files) == ["engine-0", "engine-1", "host-0", "host-1", "key-authority"]
    for role, tls in files.items():
        cert = x509.load_pem_x509_certificate(tls.cert.read_bytes())
        usage = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
        assert len(list(usage)) == 1, role  # server or client, never both


def test_run_certificates_leave_no_ca_key_behind(tmp_path):
    (tmp_path / "parties").mkdir()
    (tmp_path / "parties" / CA_KEY).write_text("a key an older hebench left here")
    make_party_certificates(tmp_path / "parties", ("aggregator", "client-0"))
    make_certificates(tmp_path / "engines", hosts=1)
    assert not list(tmp_path.rglob(CA_KEY))
    make_certificates(tmp_path / "kept", hosts=1, keep_ca_key=True)
    assert (tmp_path / "kept" / CA_KEY).exists()


def test_each_start_makes_a_new_ca_so_a_resumed_run_needs_no_old_key(tmp_path):
    suite = parse_suite(
        {
            "name": "tls",
            "data": {"dataset": "digits", "clients": 2},
            "configurations": [{"mode": "secret-sharing", "params": {"aggregators": 3}, "transport": "tls"}],
        }
    )
    run = SimpleNamespace(
        suite=suite, config=suite.configurations[0], run_dir=tmp_path, data=SimpleNamespace(clients=[0, 1])
    )
    folder = Path(party_certificates(run))  # type: ignore[arg-type]
    first = (folder / "ca.pem").read_bytes()
    assert (folder / "aggregator-2-server.pem").exists() and (folder / "client-1.pem").exists()
    assert (Path(party_certificates(run)) / "ca.pem").read_bytes() != first  # type: ignore[arg-type]
    assert not list(tmp_path.rglob(CA_KEY))


def test_engine_certs_command_says_where_the_ca_key_is(tmp_path):
    kept = CliRunner().invoke(app, ["engine", "certs", str(tmp_path / "kept"), "--hosts", "1"])
    assert kept.exit_code == 0 and (tmp_path / "kept" / CA_KEY).exists()
    assert "warning" in kept.output and str(tmp_path / "kept" / CA_KEY) in kept.output.replace("\n", "")
    dropped = CliRunner().invoke(app, ["engine", "certs", str(tmp_path / "dropped"), "--hosts", "1", "--no-ca-key"])
    assert dropped.exit_code == 0 and not (tmp_path / "dropped" / CA_KEY).exists()
    assert "engine-0.pem" in dropped.output.replace("\n", "")


def test_a_local_engine_ends_when_the_runtime_says_stop():
    # Arrange: an engine process as the local runtime starts one
    spawn = mp.get_context("spawn")
    parent, child = spawn.Pipe()
    proc = spawn.Process(target=local_engine_main, args=(EngineConfig(authkey=b"k" * 32), child), daemon=True)
    proc.start()
    assert parent.poll(120) and parent.recv()  # it listens
    started = Started(records=spawn.Queue(), parties={"engine-0": proc})

    # Act: the configuration ends
    stop_parties(started, {"engine-0": parent}, grace_s=60)

    # Assert: it ended by itself, not terminated (an engine that serves forever exits with -SIGTERM)
    assert proc.exitcode == 0, STOP
