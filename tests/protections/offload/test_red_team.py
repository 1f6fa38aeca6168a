"""Offload's red team: every cell of its threat table, earned against live engines.

Real engines (``EngineServer``, threads) with the run's door keys (``tls``: the run's engine certificates), a real
key delivery (``dial_engines`` + ``EpochKeys``, with the run's decryption allowance), real hosts (``engine_link``);
the aggregator is the lying :class:`LyingAggregator`, a colluding client the :class:`ColludingHost`. Each test checks
what the adversary obtains, exactly: the cell's claim, and no more.
"""

from __future__ import annotations

import queue
import threading
from pathlib import Path

import numpy as np
import pytest

from hebench.config import parse_suite
from hebench.crypto import create_adapter, load_adapter
from hebench.crypto.base import CIPHERTEXT_MAGIC
from hebench.errors import PartyError
from hebench.fl.allowance import Allowance
from hebench.fl.key_authority import dial_engines
from hebench.fl.key_epochs import EpochKeys
from hebench.fl.link import Opened
from hebench.fl.meter import PhaseMeter
from hebench.fl.party import KEY_AUTHORITY, PartyContext, Wiring, engine_door
from hebench.net.certs import make_certificates, make_party_certificates, party_tls
from hebench.net.messages import MessageKind
from hebench.net.transport import Message
from hebench.protections.offload.adversary import ColludingHost, LyingAggregator, engine_attempts
from hebench.protections.offload.engine import EngineConfig, EngineServer
from hebench.protections.offload.link import engine_link
from hebench.runtime.local.credentials import RunCredentials
from hebench.runtime.local.processes import engine_files
from tests.conftest import INSTALLED
from tests.net.test_tls_doors import Tap
from tests.protections.red_team import wire_messages

pytestmark = pytest.mark.skipif("tenseal-ckks" not in INSTALLED, reason="TenSEAL not installed")

CLIENTS, VALUES, ROUNDS, RUN = 3, 2000, 2, "red-team-run"
VICTIM, COLLUDER, OTHER = 0, 1, 2
SAMPLES = (5, 7, 4)
CKKS = 1e-6  # CKKS reads a value back to about 1e-8 here: 1e-6 is a clean read, 1e-1 is nothing like it


class OffloadRun:
    """Engines, key delivery and hosts of an offload run; the test plays the aggregator."""

    def __init__(self, tmp_path: Path, tls: bool = False, tap_victim: bool = False) -> None:
        config = {"mode": "offload", "adapter": "tenseal-ckks", "transport": "tls" if tls else "tcp"}
        self.suite = parse_suite(
            {
                "name": "red-team",
                "data": {"dataset": "digits", "clients": CLIENTS},
                "training": {"rounds": ROUNDS},
                "configurations": [config],
                "offload": {"chunk_values": 4096},
                "measure": {"timeout_s": 20},
            }
        )
        self.config = self.suite.configurations[0]
        self.creds = RunCredentials(self.config, CLIENTS)
        self.tls_dir = self.parties = None
        if tls:
            self.tls_dir, self.parties = str(tmp_path / "certs"), str(tmp_path / "parties")
            make_certificates(Path(self.tls_dir), hosts=CLIENTS)
            names = ("aggregator", KEY_AUTHORITY, *(f"{r}-{i}" for r in ("engine", "client") for i in range(CLIENTS)))
            make_party_certificates(Path(self.parties), names, ("aggregator", KEY_AUTHORITY))
        self.engines = []
        for i in range(CLIENTS):
            engine = EngineServer(
                EngineConfig(
                    tls=engine_files(self.tls_dir, i),
                    authkey=None if tls else self.creds.door(engine_door(i)),
                    timeout_s=20,
                    upload_tls=party_tls(self.parties, f"engine-{i}"),
                )
            )
            threading.Thread(target=engine.serve_forever, daemon=True).start()
            self.engines.append(engine)
        self.addresses = {i: e.address for i, e in enumerate(self.engines)}
        self.taps = {VICTIM: Tap(self.addresses[VICTIM])} if tap_victim else {}  # an observer on host 0's link
        allowance = Allowance(0, ROUNDS, VALUES)
        ka = self._context(KEY_AUTHORITY, allowance=allowance)
        self.key_channels = dial_engines(ka, [self.addresses[i] for i in range(CLIENTS)], self.tls_dir)
        _, public = EpochKeys(ka, self.key_channels, queue.Queue(), CLIENTS).get(0)  # the secret set to every engine
        self.public = load_adapter(public)
        rng = np.random.default_rng(5)
        self.updates = [rng.normal(0, 0.3, VALUES).astype(np.float32) for _ in range(CLIENTS)]
        self.later: dict[int, np.ndarray] = {}  # what a client uploads in round 1 (default: its round 0 update)
        self.aggregator = LyingAggregator(
            self.creds.of("aggregator"), self.public, party_tls(self.parties, "aggregator"), 20
        )
        self.opened: dict[tuple[int, int], Opened] = {}
        self.errors: dict[int, BaseException] = {}
        self.threads = []
        for i in range(CLIENTS):
            engine = self.taps[i].address if i in self.taps else self.addresses[i]
            thread = threading.Thread(target=self._host, args=(i, engine), daemon=True)
            thread.start()
            self.threads.append(thread)
        self.aggregator.admit(CLIENTS)

    def _context(self, party: str, index: int = -1, allowance: Allowance | None = None) -> PartyContext:
        return PartyContext(
            self.suite,
            self.config,
            Path("."),
            self.creds.of(party),
            RUN,
            0,
            (1, 8, 8),
            10,
            client_index=index,
            tls=self.parties,
            allowance=allowance,
        )

    def _host(self, i: int, engine: tuple[str, int]) -> None:
        """A real host: its rounds through its engine (told to train, upload, open, acknowledge)."""
        ctx = self._context(f"client-{i}", i)
        wiring = Wiring(None, self.aggregator.door.address, (engine, self.tls_dir))
        link = engine_link(ctx, wiring, SAMPLES[i], PhaseMeter())
        try:
            for r in range(ROUNDS):
                link.channel.recv(MessageKind.TRAIN)
                update = self.updates[i] if r == 0 else self.later.get(i, self.updates[i])
                link.upload({"round": r, "epoch": 0, "samples": SAMPLES[i]}, [update], None, PhaseMeter())
                self.opened[(r, i)] = link.open(link.channel.recv(), 0, PhaseMeter())
                link.channel.send(Message(MessageKind.ACK, {"round": r}))
        except Exception as err:  # a refusal ends the host's session: the test reads it
            self.errors[i] = err
        finally:
            link.close()

    def host_error(self, i: int) -> str:
        """Why host ``i``'s session ended (once it has)."""
        self.threads[i].join(timeout=20)
        return str(self.errors.get(i))

    def round(self, r: int) -> dict[int, list[bytes]]:
        """Tell every engine to train; each client's upload as the aggregator receives it."""
        self.aggregator.start_round(r, list(range(CLIENTS)))
        return self.aggregator.uploads(list(range(CLIENTS)))

    def honest(self, uploads: dict[int, list[bytes]]) -> list[bytes]:
        return self.aggregator.weighted_sum(uploads, {i: SAMPLES[i] / sum(SAMPLES) for i in uploads})

    def fedavg(self, r: int = 0) -> np.ndarray:
        ups = self.updates if r == 0 else [self.later.get(i, self.updates[i]) for i in range(CLIENTS)]
        return sum(SAMPLES[i] * ups[i].astype(np.float64) for i in range(CLIENTS)) / sum(SAMPLES)

    def close(self) -> None:
        self.aggregator.close()
        for thread in self.threads:
            thread.join(timeout=20)
        for channel in self.key_channels:
            channel.close()
        for engine in self.engines:
            engine.close()


def _error(got, want) -> float:
    return float(np.abs(np.asarray(got, np.float64) - np.asarray(want, np.float64)).max())


@pytest.fixture
def offload(tmp_path, request):
    run = OffloadRun(tmp_path, tls=getattr(request, "param", False))
    yield run
    run.close()


@pytest.mark.parametrize("offload", [False, True], ids=["tcp", "tls"], indirect=True)
def test_red_team_offload_colluding_clients_one_victim_per_round(offload):
    """N5 of issue #36. The aggregator and client 1 collude: before, client 1's engine decrypted any ciphertext on
    request (three uploads in one round, max error 7.5e-9), any engine served any host (one engine credential), and
    client 1 could push its own key set to the victim's engine as the key authority (the victim's next upload read
    to 7.4e-9). Now: an engine cannot tell an aggregate from one upload, so the aggregator's substitution gives
    client 1 one victim's update in round 0; a second aggregate that round is refused; its engine as an oracle
    opens what is left of the run's allowance (round 1's: one more upload) and nothing beyond; the victim's engine
    refuses client 1's session and key push (keys, or certificate). In all: one victim per round of the run."""
    run, agg = offload, offload.aggregator
    colluder = ColludingHost(COLLUDER, run.creds.of("client-1"), RUN, run.tls_dir)
    uploads = run.round(0)
    honest = run.honest(uploads)
    for i in (VICTIM, OTHER):
        agg.send_aggregate(i, 0, honest)
    agg.send_aggregate(COLLUDER, 0, uploads[VICTIM])  # substitute: the victim's upload as "the aggregate"
    for i in range(CLIENTS):
        agg.heard_back(i)
    assert _error(run.opened[(0, COLLUDER)].encrypted, run.updates[VICTIM]) < CKKS  # one victim, read

    agg.send_aggregate(COLLUDER, 0, uploads[OTHER])  # replay: a second aggregate in round 0
    with pytest.raises(PartyError):
        agg.heard_back(COLLUDER)
    assert "more than one aggregate" in run.host_error(COLLUDER)

    answers = colluder.oracle(run.addresses[COLLUDER], [uploads[OTHER][0], uploads[VICTIM][0]])
    assert _error(answers[0], run.updates[OTHER]) < CKKS  # round 1's allowance, spent early: one more upload
    assert isinstance(answers[1], PartyError) and "above the run's 4000" in answers[1].problem  # nothing beyond

    victims_engine = run.addresses[VICTIM]
    assert not any(a.admitted for a in colluder.other_engine(victims_engine, VICTIM, uploads[OTHER][0]))
    mine = create_adapter("tenseal-ckks")
    mine.keygen()
    assert not any(a.admitted for a in colluder.push_keys(victims_engine, VICTIM, mine))
    assert run.engines[VICTIM].keys(RUN).epochs() == [0]  # only the key authority's set


def test_red_team_offload_colluding_clients_glued_aggregate(offload):
    """The aggregator hands client 1's engine two uploads glued into one "aggregate" (twice the model's length):
    the engine decrypts the first (one aggregate's worth: one victim) and refuses the rest."""
    run, agg = offload, offload.aggregator
    uploads = run.round(0)
    agg.send_aggregate(COLLUDER, 0, [*uploads[VICTIM], *uploads[OTHER]])
    with pytest.raises(PartyError):
        agg.heard_back(COLLUDER)
    assert "4000 values in round 0: more than one aggregate (2000 values)" in run.host_error(COLLUDER)
    assert (0, COLLUDER) not in run.opened  # its host never got a whole aggregate: at most the first upload's chunk


def test_red_team_offload_aggregator(offload):
    """The honest-but-curious aggregator receives ciphertext only, holds the public set only, and no engine's door
    opens for any key it holds (its own, and the clients' keys at its own door)."""
    run, agg = offload, offload.aggregator
    uploads = run.round(0)
    honest = run.honest(uploads)
    for i in range(CLIENTS):
        agg.send_aggregate(i, 0, honest)
        agg.heard_back(i)
    assert _error(run.opened[(0, VICTIM)].encrypted, run.fedavg()) < CKKS  # the protocol ran
    assert all(blob.startswith(CIPHERTEXT_MAGIC) for blobs in uploads.values() for blob in blobs)
    with pytest.raises(Exception):  # noqa: B017 - each library raises its own error for a missing secret key
        run.public.decrypt(run.public.deserialize(uploads[VICTIM][0]))
    mine = create_adapter("tenseal-ckks")
    mine.keygen()
    attempts = engine_attempts(agg.credentials, run.addresses, RUN, mine.export_keys(secret=True), uploads[VICTIM][0])
    assert attempts and not any(a.admitted for a in attempts)


def test_red_team_offload_key_holder(offload):
    """An engine that colludes with the aggregator holds the epoch's one secret set: every upload, read."""
    run, agg = offload, offload.aggregator
    uploads = run.round(0)
    secret = run.engines[OTHER].keys(RUN).get(0)  # what engine 2 was delivered
    for i in range(CLIENTS):
        read = np.concatenate([secret.decrypt(secret.deserialize(b)) for b in uploads[i]])
        assert _error(read, run.updates[i]) < CKKS
    for i in range(CLIENTS):  # the round finishes honestly
        agg.send_aggregate(i, 0, run.honest(uploads))


def _offset_round(run: OffloadRun, delta: np.ndarray, moved: tuple[int, ...]) -> dict[int, list[bytes]]:
    """Round 0 with clients ``moved`` handed the true aggregate plus ``delta``; round 1's uploads (from the moved
    models, as the clients compute them)."""
    agg = run.aggregator
    uploads = run.round(0)
    honest = run.honest(uploads)
    for i in range(CLIENTS):
        agg.send_aggregate(i, 0, agg.offset(honest, delta) if i in moved else honest)
        agg.heard_back(i)
    return run.round(1)


def test_red_team_offload_malicious_aggregator_model_inconsistency(offload):
    """The aggregator hands the non-victims a dead model (their aggregate plus an encrypted offset: the public set
    allows it); their engines open it for their hosts. Alone it still holds ciphertext only, and no engine opens
    anything for it: nothing."""
    run, agg = offload, offload.aggregator
    dead = np.full(VALUES, -3.0, np.float32)
    run.later = {OTHER: np.zeros(VALUES, np.float32), COLLUDER: np.zeros(VALUES, np.float32)}  # dead models' updates
    following = _offset_round(run, dead, moved=(COLLUDER, OTHER))
    assert _error(run.opened[(0, OTHER)].encrypted, run.fedavg() + dead) < 1e-4  # the deviation took effect
    assert _error(run.opened[(0, VICTIM)].encrypted, run.fedavg()) < CKKS
    assert all(blob.startswith(CIPHERTEXT_MAGIC) for blobs in following.values() for blob in blobs)
    attempts = engine_attempts(agg.credentials, run.addresses, RUN, b"", following[VICTIM][0])
    assert not any(a.admitted for a in attempts)  # the victim's isolated update stays ciphertext to it


def test_red_team_offload_malicious_aggregator_trap_weights(offload):
    """Trap weights in every client's next model, the same way; the next uploads reach the aggregator as ciphertext
    only and no engine decrypts for it: nothing."""
    run, agg = offload, offload.aggregator
    trap = np.zeros(VALUES, np.float32)
    trap[:64] = 1.0
    following = _offset_round(run, trap, moved=tuple(range(CLIENTS)))
    assert _error(run.opened[(0, VICTIM)].encrypted, run.fedavg() + trap) < 1e-4
    assert all(blob.startswith(CIPHERTEXT_MAGIC) for blobs in following.values() for blob in blobs)
    attempts = engine_attempts(agg.credentials, run.addresses, RUN, b"", following[VICTIM][0])
    assert not any(a.admitted for a in attempts)


def test_red_team_offload_observer_without_tls(tmp_path):
    """Without TLS an observer between a host and its engine reads the host's plaintext update off the wire."""
    run = OffloadRun(tmp_path, tap_victim=True)
    try:
        uploads = run.round(0)
        for i in range(CLIENTS):
            run.aggregator.send_aggregate(i, 0, run.honest(uploads))
            run.aggregator.heard_back(i)
    finally:
        run.close()
    seen = wire_messages(run.taps[VICTIM].finished()["to listener"], ">Q")
    values = np.concatenate([np.frombuffer(m.parts[0], "<f4") for m in seen if m.kind == MessageKind.UPDATE_CHUNK])
    assert _error(values, run.updates[VICTIM]) == 0.0  # the plaintext update, exactly
