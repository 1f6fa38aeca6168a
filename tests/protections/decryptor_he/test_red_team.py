"""Decryptor-HE's red team: every cell of its threat table, earned against the live decryptor.

The real key authority (``run_key_authority``), decryptor (``run_decryptor``) and clients (``decryptor_link``) on
loopback with the run's door keys (``tls``: its certificates); the aggregator is the lying :class:`LyingAggregator`.
Each test checks what the adversary obtains, exactly: the cell's claim, and no more.

Choice (issue #36, N6): the decryptor opens at most one aggregate per round of the run, of the model's length, and
the table says one victim per round for a colluding client. Opening only "an aggregate of at least t distinct
uploads it can account for" would mean handing the decryptor every upload (it cannot check a sum it did not make):
n times its traffic, the sum moved to it, and a curious decryptor would then read every update alone, without the
aggregator, which is the separation this mode exists for.
"""

from __future__ import annotations

import queue
import threading
from pathlib import Path

import numpy as np
import pytest
from cryptography.fernet import Fernet, InvalidToken

from hebench.config import parse_suite
from hebench.crypto import load_adapter
from hebench.crypto.base import CIPHERTEXT_MAGIC
from hebench.errors import PartyError, PeerClosedError
from hebench.fl.allowance import Allowance
from hebench.fl.key_authority import run_key_authority
from hebench.fl.link import Opened
from hebench.fl.meter import PhaseMeter
from hebench.fl.party import KEY_AUTHORITY, PartyContext, Wiring
from hebench.net.certs import make_party_certificates, party_tls
from hebench.net.messages import MessageKind
from hebench.net.transport import Message, read_transcript
from hebench.protections.decryptor_he.adversary import LyingAggregator
from hebench.protections.decryptor_he.decryptor import run_decryptor
from hebench.protections.decryptor_he.link import decryptor_link
from hebench.runtime.local.credentials import RunCredentials
from tests.conftest import INSTALLED
from tests.net.test_tls_doors import Tap
from tests.protections.red_team import Control, wire_messages

pytestmark = pytest.mark.skipif("tenseal-ckks" not in INSTALLED, reason="TenSEAL not installed")

CLIENTS, VALUES, RUN = 3, 2000, "red-team-run"
VICTIM, COLLUDER, OTHER = 0, 1, 2
SAMPLES = (5, 7, 4)
CKKS = 1e-6


class DecryptorRun:
    """The key authority, the decryptor and the clients of a decryptor-he run; the test plays the aggregator."""

    def __init__(self, tmp_path: Path, tls: bool = False, rounds: int = 2, tap_keys: bool = False) -> None:
        config = {"mode": "decryptor-he", "adapter": "tenseal-ckks", "transport": "tls" if tls else "tcp"}
        self.suite = parse_suite(
            {
                "name": "red-team",
                "data": {"dataset": "digits", "clients": CLIENTS},
                "training": {"rounds": rounds},
                "configurations": [config],
                "measure": {"timeout_s": 20, "transcripts": True},
            }
        )
        self.config, self.rounds, self.run_dir = self.suite.configurations[0], rounds, tmp_path
        self.creds = RunCredentials(self.config, CLIENTS)
        self.parties = str(tmp_path / "parties") if tls else None
        if tls:
            servers = ("aggregator", KEY_AUTHORITY, "aggregator-1")
            make_party_certificates(
                Path(tmp_path / "parties"), (*servers, *(f"client-{i}" for i in range(CLIENTS))), servers
            )
        self.allowance = Allowance(0, rounds, VALUES)
        self.errors: dict[str, BaseException] = {}
        self.threads: dict[str, threading.Thread] = {}
        ka = Control(None)
        self._start("key-authority", run_key_authority, self._context(KEY_AUTHORITY), ka)
        self.doors = ka.replies.get(timeout=20)
        self.tap = Tap(self.doors["decryptor"]) if tap_keys else None  # an observer on the decryptor's key channel
        self.aggregator = LyingAggregator(self.creds.of("aggregator"), party_tls(self.parties, "aggregator"))
        keys_at = self.tap.address if self.tap else self.doors["decryptor"]
        decryptor = Control(1, Wiring(keys_at, self.aggregator.door.address))
        self._start("decryptor", run_decryptor, self._context("aggregator-1"), decryptor)
        rng = np.random.default_rng(8)
        self.updates = {
            r: [rng.normal(0, 0.3, VALUES).astype(np.float32) for _ in range(CLIENTS)] for r in range(rounds)
        }
        self.opened: dict[tuple[int, int], Opened] = {}
        for i in range(CLIENTS):
            self._start(f"client-{i}", self._client, i)
        self.aggregator.admit(CLIENTS)
        self.public = self.aggregator.keys(self.doors["public"])

    def _context(self, party: str, index: int = -1) -> PartyContext:
        return PartyContext(
            self.suite,
            self.config,
            self.run_dir,
            self.creds.of(party),
            RUN,
            0,
            (1, 8, 8),
            10,
            client_index=index,
            tls=self.parties,
            allowance=self.allowance,
        )

    def _start(self, name: str, body, *args) -> None:
        def run() -> None:
            try:
                body(*args) if name.startswith("client") else body(*args, queue.Queue())
            except Exception as err:  # a refusal: the test reads it
                self.errors[name] = err

        self.threads[name] = threading.Thread(target=run, daemon=True)
        self.threads[name].start()

    def _client(self, i: int) -> None:
        """A real client: told to train, it uploads under the public set and opens the sealed aggregate."""
        link = decryptor_link(
            self._context(f"client-{i}", i),
            Wiring(self.doors["key_holder"], self.aggregator.door.address),
            SAMPLES[i],
            PhaseMeter(),
        )
        try:
            for r in range(self.rounds):
                link.channel.recv(MessageKind.TRAIN)
                link.upload({"round": r, "epoch": 0, "samples": SAMPLES[i]}, [self.updates[r][i]], None, PhaseMeter())
                self.opened[(r, i)] = link.open(link.channel.recv(), 0, PhaseMeter())
                link.channel.send(Message(MessageKind.ACK, {"round": r}))
        finally:
            link.close()

    def round(self, r: int) -> dict[int, list[bytes]]:
        self.aggregator.start_round(r)
        return self.aggregator.uploads()

    @property
    def weights(self) -> dict[int, float]:
        return {i: SAMPLES[i] / sum(SAMPLES) for i in range(CLIENTS)}

    def fedavg(self, r: int) -> np.ndarray:
        return sum(self.weights[i] * self.updates[r][i].astype(np.float64) for i in range(CLIENTS))  # type: ignore[return-value]

    def decryptors_secret_set(self):
        """What the decryptor was handed at its door: the epoch's secret set (its transcript)."""
        path = next(self.run_dir.rglob("aggregator-1-key-authority.bin"))
        return load_adapter(next(m for m in read_transcript(path) if m.kind == MessageKind.KEYS).parts[0])

    def wait(self, name: str) -> str:
        self.threads[name].join(timeout=20)
        return str(self.errors.get(name))

    def close(self) -> None:
        self.aggregator.close()
        for thread in self.threads.values():
            thread.join(timeout=20)


def _error(got, want) -> float:
    return float(np.abs(np.asarray(got, np.float64) - np.asarray(want, np.float64)).max())


def _honest(run: DecryptorRun, r: int, uploads: dict[int, list[bytes]]) -> bytes:
    token = run.aggregator.ask(run.aggregator.weighted_sum(uploads, run.weights))
    run.aggregator.relay(r, token, run.weights)
    return token


@pytest.mark.parametrize("tls", [False, True], ids=["tcp", "tls"])
def test_red_team_decryptor_he_colluding_clients_one_victim_per_round(tmp_path, tls):
    """The aggregator hands the decryptor one victim's upload as each round's aggregate; client 1 opens the sealed
    answer: one victim per round (round 0: client 0, round 1: client 2), and nothing once the run's rounds are
    spent: the decryptor answers no further request."""
    run = DecryptorRun(tmp_path, tls=tls)
    agg = run.aggregator
    try:
        for r, victim in ((0, VICTIM), (1, OTHER)):
            uploads = run.round(r)
            agg.relay(r, agg.ask(uploads[victim]), run.weights)  # substitute
            assert _error(run.opened[(r, COLLUDER)].encrypted, run.updates[r][victim]) < CKKS  # one victim, read
        assert agg.decryptor is not None
        agg.decryptor.send(Message(MessageKind.DECRYPT, {"epoch": 0}, tuple(uploads[VICTIM])))  # a third aggregate
        agg.ka.send(Message(MessageKind.DONE))  # the run is over for the key authority: the decryptor ends
        with pytest.raises(PeerClosedError):
            agg.decryptor.recv(MessageKind.DECRYPTED)  # unanswered: two rounds, two aggregates
        agg.ka.close()
        agg.ka = None
    finally:
        run.close()
    assert not run.errors


@pytest.mark.parametrize("tls", [False, True], ids=["tcp", "tls"])
def test_red_team_decryptor_he_colluding_clients_glued_aggregate(tmp_path, tls):
    """N6 of issue #36: three uploads glued into one "aggregate" were decrypted and sealed in one round, and the
    colluding client read all three (max errors 7.5e-9). Now the decryptor refuses anything longer than the model:
    nothing is decrypted, and the aggregator hears why."""
    run = DecryptorRun(tmp_path, tls=tls, rounds=1)
    try:
        uploads = run.round(0)
        with pytest.raises(PartyError, match="6000 values in round 0: more than one aggregate"):
            run.aggregator.ask([*uploads[VICTIM], *uploads[COLLUDER], *uploads[OTHER]])
        assert "more than one aggregate" in run.wait("decryptor")
    finally:
        run.close()
    assert not run.opened


def test_red_team_decryptor_he_aggregator(tmp_path):
    """The honest-but-curious aggregator receives ciphertext in and a sealed aggregate back; its keys open neither
    the clients' door (the seal) nor the decryptor's (the secret set)."""
    run = DecryptorRun(tmp_path, rounds=1)
    agg = run.aggregator
    try:
        uploads = run.round(0)
        token = _honest(run, 0, uploads)
        assert _error(run.opened[(0, VICTIM)].encrypted, run.fedavg(0)) < CKKS  # the protocol ran
        assert all(b.startswith(CIPHERTEXT_MAGIC) for blobs in uploads.values() for b in blobs)
        with pytest.raises(InvalidToken):
            Fernet(Fernet.generate_key()).decrypt(token)
        assert agg.knock(run.doors["key_holder"], "key-authority", ("aggregator", "client-0")) == []
        assert agg.knock(run.doors["decryptor"], "key-authority", ("aggregator", "aggregator-1")) == []
    finally:
        run.close()


def test_red_team_decryptor_he_key_holder(tmp_path):
    """The decryptor colludes with the aggregator: its secret set opens every upload."""
    run = DecryptorRun(tmp_path, rounds=1)
    try:
        uploads = run.round(0)
        secret = run.decryptors_secret_set()
        for i in range(CLIENTS):
            read = np.concatenate([secret.decrypt(secret.deserialize(b)) for b in uploads[i]])
            assert _error(read, run.updates[0][i]) < CKKS
        _honest(run, 0, uploads)
    finally:
        run.close()


def test_red_team_decryptor_he_malicious_aggregator_model_inconsistency(tmp_path):
    """Alone, the aggregator isolates a victim (its upload as the round's aggregate, which every client then takes as
    its model: what model inconsistency is for); the decryptor's answer is sealed to the clients, and the
    aggregator's keys do not open the clients' door for the seal: nothing."""
    run = DecryptorRun(tmp_path, rounds=1)
    agg = run.aggregator
    try:
        uploads = run.round(0)
        isolated = agg.ask(uploads[VICTIM])
        meta = {"round": 0, "epoch": 0, "weights": {str(i): w for i, w in run.weights.items()}, "sealed": True}
        for channel in agg.clients.values():  # every client gets the victim's update back as "the aggregate"
            channel.send(Message(MessageKind.AGGREGATE, meta, (isolated,)))
        for channel in agg.clients.values():
            channel.recv(MessageKind.ACK)
        assert _error(run.opened[(0, COLLUDER)].encrypted, run.updates[0][VICTIM]) < CKKS  # what a colluder would read
        with pytest.raises(InvalidToken):
            Fernet(Fernet.generate_key()).decrypt(isolated)  # the aggregator alone: sealed
        assert agg.knock(run.doors["key_holder"], "key-authority", ("aggregator", "client-0")) == []
    finally:
        run.close()


def test_red_team_decryptor_he_malicious_aggregator_trap_weights(tmp_path):
    """Trap weights in the aggregate (an encrypted offset): the decryptor opens it (the model's length), every
    client takes the trapped model; the aggregator reads only ciphertext and sealed answers: nothing."""
    run = DecryptorRun(tmp_path, rounds=2)
    agg = run.aggregator
    trap = np.zeros(VALUES, np.float32)
    trap[:64] = 1.0
    try:
        uploads = run.round(0)
        token = agg.ask(agg.offset(agg.weighted_sum(uploads, run.weights), trap))
        agg.relay(0, token, run.weights)
        assert _error(run.opened[(0, VICTIM)].encrypted, run.fedavg(0) + trap) < 1e-4  # the deviation took effect
        following = run.round(1)
        assert all(b.startswith(CIPHERTEXT_MAGIC) for blobs in following.values() for b in blobs)
        with pytest.raises(InvalidToken):
            Fernet(Fernet.generate_key()).decrypt(token)
        _honest(run, 1, following)
    finally:
        run.close()


def test_red_team_decryptor_he_observer_without_tls(tmp_path):
    """Without TLS an observer on the decryptor's key channel reads the secret set off the wire, and every upload
    with it."""
    run = DecryptorRun(tmp_path, rounds=1, tap_keys=True)
    try:
        uploads = run.round(0)
        _honest(run, 0, uploads)
    finally:
        run.close()
    assert run.tap is not None
    pushed = [m for m in wire_messages(run.tap.finished()["to dialler"]) if m.kind == MessageKind.KEYS]
    secret = load_adapter(pushed[0].parts[0])
    for i in range(CLIENTS):
        read = np.concatenate([secret.decrypt(secret.deserialize(b)) for b in uploads[i]])
        assert _error(read, run.updates[0][i]) < CKKS
