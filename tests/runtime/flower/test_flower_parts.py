"""The pieces of hebench on Flower, without a federation: wire format, plan, hub doors and their credentials."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import queue
import socket
import threading
from pathlib import Path

import numpy as np
import pytest

from hebench.config import parse_suite
from hebench.crypto import create_adapter, load_adapter
from hebench.errors import CiphertextError, ParameterError, PartyError
from hebench.fl.party import Credentials, PartyContext
from hebench.net.certs import make_certificates
from hebench.net.stream import FramedSocket
from hebench.results.records import HubNoteRecord, PartyRoundRecord
from tests.conftest import INSTALLED

flwr = pytest.importorskip("flwr", reason="the hebench[flower] extra is not installed")

from hebench.fl.key_epochs import EpochKeys  # noqa: E402
from hebench.runtime.flower.codec import (  # noqa: E402
    CIPHER_STYPE,
    content_bytes,
    content_from_bytes,
    model_record,
    update_parts,
    update_record,
)
from hebench.runtime.flower.federation import Federation  # noqa: E402
from hebench.runtime.flower.hub import Hub  # noqa: E402
from hebench.runtime.flower.hub_link import HubLink  # noqa: E402
from hebench.runtime.flower.hub_wire import hub_tls, knock, open_door, server_context  # noqa: E402
from hebench.runtime.flower.plan import FlowerPlan, NodeSettings  # noqa: E402

needs_tenseal = pytest.mark.skipif("tenseal-ckks" not in INSTALLED, reason="TenSEAL not installed")


def suite(mode: str = "host-he"):
    return parse_suite(
        {
            "name": "parts",
            "data": {"dataset": "digits", "clients": 2},
            "model": {"name": "mlp", "hidden": 4},
            "training": {"rounds": 1},
            "configurations": [{"mode": mode, "adapter": "tenseal-ckks"}],
            "measure": {"timeout_s": 20},
        }
    )


# --- ciphertext travels as bytes in custom-stype Arrays ------------------------------------


def test_update_record_round_trips_bytes_and_refuses_numpy_decoding():
    blobs, clear = (b"HEC1-first", b"HEC1-second"), (b"plain-part",)
    record = update_record(blobs, clear)
    assert update_parts(record) == (blobs, clear)
    with pytest.raises(TypeError, match="Unsupported serialization type"):
        record["c0"].numpy()  # a strategy cannot decode ciphertext by accident


def test_a_plaintext_update_is_refused_where_ciphertext_is_expected():
    with pytest.raises(CiphertextError, match=r"has stype 'numpy\.ndarray', expected 'hebench\.ciphertext'"):
        update_parts(model_record(np.ones(4, np.float32)))


def test_content_bytes_are_what_flower_serializes():
    from flwr.app import RecordDict

    content = RecordDict({"arrays": update_record((b"abc",), ())})
    again = content_from_bytes(content_bytes(content))
    assert again.array_records["arrays"]["c0"].data == b"abc"
    assert again.array_records["arrays"]["c0"].stype == CIPHER_STYPE


# --- plan (run config, public) and node settings (node config, node-local) ----------------


def test_plan_round_trips_through_run_config():
    plan = FlowerPlan(suite(), 0, "run-1", ("127.0.0.1", 1), ("127.0.0.1", 2), "/tmp/x", "PEM")
    again = FlowerPlan.from_run_config({"hebench-plan": plan.to_json()})
    assert again == plan and again.config.adapter == "tenseal-ckks"
    assert "secret" not in plan.to_json().lower()


def test_missing_plan_and_node_settings_name_the_fix():
    with pytest.raises(PartyError, match="carries no hebench plan") as err:
        FlowerPlan.from_run_config({})
    assert "hebench run SUITE --engine flower" in err.value.fix
    with pytest.raises(PartyError, match="lacks hebench-credential") as err:
        NodeSettings.from_node_config({"partition-id": 0, "num-partitions": 2})
    assert "--node-config" in err.value.fix


def test_federation_file_errors_and_node_config(tmp_path):
    with pytest.raises(PartyError, match=r"federation\.json does not exist") as err:
        Federation.load(tmp_path)
    assert "hebench flower up" in err.value.fix
    (tmp_path / "federation.json").write_text("{not json")
    with pytest.raises(PartyError, match="not valid JSON"):
        Federation.load(tmp_path)
    (tmp_path / "federation.json").write_text(json.dumps({"folder": str(tmp_path), "colour": "blue"}))
    with pytest.raises(PartyError, match="does not describe a federation"):
        Federation.load(tmp_path)
    fed = Federation(str(tmp_path), "127.0.0.1:9", None, 2, "/k/client.key", hub_tls_dir="/k/hub-tls")
    fed.save()
    assert Federation.load(tmp_path) == fed
    settings = NodeSettings.from_node_config(_parse_node_config(fed.node_config(1)))
    assert settings.partition == 1 and settings.credential == Path("/k/client.key")
    assert settings.hub_ca == Path("/k/hub-tls/ca.pem") and settings.engine is None


def _parse_node_config(text: str) -> dict[str, str]:
    from flwr.common.config import parse_config_args  # Flower's own parser

    return dict(parse_config_args([text]))


# --- the hub: public keys to the server, secret keys to host-he clients only -----------------


class RunningHub:
    def __init__(self, tmp_path: Path, mode: str) -> None:
        self.ctx = PartyContext(
            suite=suite(mode),
            config=suite(mode).configurations[0],
            run_dir=tmp_path,
            credentials=Credentials(hub=os.urandom(32)),
            run_id="test-run",
            start_round=0,
            input_shape=(1, 28, 28),
            num_classes=10,
        )
        self.server_key = self.ctx.credentials.hub
        self.client_key = os.urandom(32)
        files = make_certificates(tmp_path / "hub-tls", hosts=0, server_role="hub")
        self.ca = files["hub"].ca.read_text()
        self.records: queue.Queue = queue.Queue()
        tls = hub_tls(str(tmp_path / "hub-tls"))
        hub = Hub(self.ctx, EpochKeys(self.ctx, [], self.records, 3), self.records, server_context(tls))
        self.hub = hub
        self.doors = {}
        for door, credential in (("server", self.server_key), ("client", self.client_key)):
            listener = open_door("127.0.0.1", 0, tls)
            self.doors[door] = listener.getsockname()[:2]
            threading.Thread(target=hub.serve, args=(listener, door, credential), daemon=True).start()

    def link(self, door: str, credential: bytes, ca: str | None = None) -> HubLink:
        return HubLink.open(self.doors[door], ca or self.ca, credential, {"role": door, "client": 0}, 20)


@needs_tenseal
def test_server_door_hands_out_public_keys_only_and_client_door_the_secret_set(tmp_path):
    hub = RunningHub(tmp_path, "host-he")
    server = hub.link("server", hub.server_key)
    public = server.adapter(0, secret=False)
    client = hub.link("client", hub.client_key)
    secret = client.adapter(0, secret=True)
    assert not public.has_secret_key and secret.has_secret_key
    assert public.key_id == secret.key_id
    with pytest.raises(PartyError, match="the hub sent only a public key set"):
        hub.link("server", hub.server_key).adapter(0, secret=True)
    for link in (server, client):
        link.close()


@needs_tenseal
def test_in_offload_mode_the_client_door_refuses_the_secret_key(tmp_path):
    hub = RunningHub(tmp_path, "offload")
    client = hub.link("client", hub.client_key)
    with pytest.raises(PartyError, match="asked for the secret key in offload mode") as err:
        client.adapter(0, secret=True)
    assert "only the node's engine holds keys" in err.value.fix


def test_a_party_without_the_credential_is_refused(tmp_path):
    hub = RunningHub(tmp_path, "host-he")
    with pytest.raises(PartyError, match="refused this party"):
        hub.link("client", os.urandom(32))
    with pytest.raises(PartyError, match="refused this party"):
        hub.link("client", hub.server_key)  # the server's credential does not open the clients' door
    note = hub.records.get(timeout=10)
    assert isinstance(note, HubNoteRecord) and "refused" in note.problem


def test_a_hub_certificate_from_another_ca_is_refused(tmp_path):
    hub = RunningHub(tmp_path, "host-he")
    other = make_certificates(tmp_path / "other", hosts=0, server_role="hub")["hub"].ca.read_text()
    with pytest.raises(PartyError, match="CERTIFICATE_VERIFY_FAILED"):
        hub.link("client", hub.client_key, ca=other)


def test_a_stand_in_hub_that_lacks_the_credential_gets_no_client(tmp_path):
    """A SuperLink that rewrites the run config's hub address still cannot hand a node keys."""
    listener = socket.create_server(("127.0.0.1", 0))
    got: list[bytes] = []

    def impostor() -> None:
        conn, _ = listener.accept()
        framed = FramedSocket(conn)
        framed.send_bytes(os.urandom(32))
        got.append(framed.recv_bytes())  # whatever the client answers: accept it
        framed.send_bytes(b"ok")
        nonce = framed.recv_bytes()  # the client's challenge: answered with a guessed key
        framed.send_bytes(hmac.digest(os.urandom(32), nonce, hashlib.sha256))
        conn.close()

    threading.Thread(target=impostor, daemon=True).start()
    with pytest.raises(PartyError, match="failed authentication"):
        knock(listener.getsockname()[:2], None, os.urandom(32), 10)
    assert got  # the exchange did reach the client's own challenge
    listener.close()


def test_keys_never_cross_the_network_in_the_clear():
    with pytest.raises(ParameterError, match="without TLS"):
        open_door("0.0.0.0", 0, None)
    with pytest.raises(ParameterError, match="keys would cross the network in the clear") as err:
        knock(("192.0.2.1", 9), None, b"k", 1)
    assert "hebench-hub-ca" in err.value.fix


@needs_tenseal
def test_hub_records_are_filtered_by_door(tmp_path):
    hub = RunningHub(tmp_path, "host-he")
    client = hub.link("client", hub.client_key)
    client.record({"kind": "party_round", "role": "client", "client": 0, "round": 0})
    record = hub.records.get(timeout=10)
    assert (
        isinstance(record, PartyRoundRecord) and record.runtime == "flower" and record.config == "host-he/tenseal-ckks"
    )
    client.record({"kind": "flower_run"})  # only the server closes a run
    with pytest.raises(PartyError, match="not accepted here"):
        client.channel.recv()


# --- the strategy: sums ciphertext with public keys and sample-count weights ----------------


class FakeHub:
    """Public keys of one key set, as the hub's server door hands them out."""

    def __init__(self, public: bytes) -> None:
        self.public, self.recorded = public, []

    def adapter(self, epoch: int, secret: bool) -> object:
        return load_adapter(self.public)

    def record(self, record: dict) -> None:
        self.recorded.append(record)


@needs_tenseal
def test_strategy_sums_ciphertext_updates_with_sample_weights_and_public_keys_only(tmp_path, monkeypatch):
    from flwr.app import Message as FlowerMessage
    from flwr.app import MetricRecord, RecordDict
    from flwr.supercore.task_identity import TaskIdentity

    for field in ("_run_id", "_node_id", "_task_id"):  # what a ServerApp process has set
        monkeypatch.setattr(TaskIdentity, field, 1)

    from hebench.runtime.flower.strategy import HEFedAvg

    keys = create_adapter("tenseal-ckks", {})
    keys.keygen()
    plan = FlowerPlan(suite(), 0, "run-1", ("127.0.0.1", 1), ("127.0.0.1", 2), str(tmp_path))
    strategy = HEFedAvg(plan, FakeHub(keys.export_keys(secret=False)))  # type: ignore[arg-type]
    updates = {0: (np.full(5, 1.0, np.float32), 30), 1: (np.full(5, 4.0, np.float32), 10)}
    replies = []
    for client, (vector, samples) in updates.items():
        asked = FlowerMessage(RecordDict(), dst_node_id=client + 1, message_type="train")
        content = RecordDict(
            {
                "arrays": update_record((keys.serialize(keys.encrypt(vector)),), ()),
                "metrics": MetricRecord({"num-examples": samples, "hebench-client": client, "train-loss": 0.5}),
            }
        )
        replies.append(FlowerMessage(content, reply_to=asked))
    strategy.samples = {0: 30, 1: 10}  # as the nodes stated them (the partition query)
    aggregate = strategy.aggregate_replies(1, [0, 1], iter(replies))
    assert not strategy.holds_secret_key and aggregate is not None
    blobs, clear = update_parts(aggregate)
    assert clear == () and np.allclose(keys.decrypt(keys.deserialize(blobs[0])), 0.75 * 1.0 + 0.25 * 4.0, atol=1e-6)
    asked = FlowerMessage(RecordDict(), dst_node_id=3, message_type="train")
    metrics = MetricRecord({"num-examples": 1, "hebench-client": 2})
    plaintext = FlowerMessage(
        RecordDict({"arrays": model_record(np.ones(5, np.float32)), "metrics": metrics}), reply_to=asked
    )
    strategy.samples[2] = 1
    with pytest.raises(CiphertextError):  # HE modes never accept a plaintext update
        strategy.aggregate_replies(1, [0, 2], iter([*replies[:1], plaintext]))
    foreign = FlowerMessage(RecordDict({"arrays": model_record(np.ones(5, np.float32))}), reply_to=asked)
    with pytest.raises(PartyError, match="without hebench's update fields"):  # a ClientApp that is not hebench's
        strategy.aggregate_replies(1, [2], iter([foreign]))
    strategy.samples[1] = 11
    with pytest.raises(PartyError, match="trained on 10 samples, but stated 11"):  # a shard that changed
        strategy.aggregate_replies(1, [1], iter([replies[1]]))


def _outside_address() -> str | None:
    import psutil

    for addrs in psutil.net_if_addrs().values():
        for a in addrs:
            if a.family == socket.AF_INET and not a.address.startswith("127."):
                return a.address
    return None


@needs_tenseal
def test_a_hub_beyond_loopback_serves_keys_over_tls_with_a_flower_certs_certificate(tmp_path):
    from typer.testing import CliRunner

    from hebench.cli.main import app

    address = _outside_address()
    if address is None:
        pytest.skip("this machine has no non-loopback IPv4 address")
    result = CliRunner().invoke(app, ["flower", "certs", str(tmp_path / "outside-tls"), "--hub-host", address])
    assert result.exit_code == 0, result.output
    hub = RunningHub(tmp_path, "host-he")  # its own loopback doors; now one on the outside address
    tls = hub_tls(str(tmp_path / "outside-tls"))
    listener = open_door(address, 0, tls)
    credential = os.urandom(32)
    inner = Hub(hub.ctx, EpochKeys(hub.ctx, [], hub.records, 3), hub.records, server_context(tls))
    threading.Thread(target=inner.serve, args=(listener, "client", credential), daemon=True).start()
    ca = (tmp_path / "outside-tls" / "ca.pem").read_text()
    link = HubLink.open(listener.getsockname()[:2], ca, credential, {"role": "client", "client": 0}, 20)
    assert link.adapter(0, secret=True).has_secret_key
    link.close()
    with pytest.raises(ParameterError):  # and never without the certificate
        HubLink.open(listener.getsockname()[:2], None, credential, {"role": "client", "client": 0}, 20)
    listener.close()
