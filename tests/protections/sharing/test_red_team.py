"""Secret sharing's red team: every cell of its threat table, earned against the live protocol.

Real share holders (``run_share_holder``) and real clients (``share_link``) on loopback, with the run's door keys
(and, ``tls``, its certificates); aggregator 0 is the lying :class:`LyingCoordinator`. Each test checks what the
adversary obtains, exactly: the cell's claim, and no more (a reading of the victim's update that misses it by far
more than one quantisation step, or a door that refused).
"""

from __future__ import annotations

import dataclasses
import threading
from pathlib import Path

import numpy as np
import pytest

from hebench.config import parse_suite
from hebench.fl.link import Opened
from hebench.fl.meter import PhaseMeter
from hebench.fl.party import PartyContext, Wiring
from hebench.net.certs import make_party_certificates, party_tls
from hebench.net.messages import MessageKind
from hebench.net.transport import read_transcript
from hebench.protections.sharing.adversary import LyingCoordinator, read_update
from hebench.protections.sharing.holder import run_share_holder
from hebench.protections.sharing.link import share_link
from hebench.protections.sharing.params import SecretSharingParams
from hebench.protections.sharing.ring_shares import quantizer
from hebench.runtime.local.credentials import RunCredentials
from tests.net.test_tls_doors import Tap
from tests.protections.red_team import Control, wire_messages

CLIENTS, VALUES, SAMPLES = 3, 2000, (5, 7, 4)
VICTIM = 0


class ShareRound:
    """One round of secret sharing: K - 1 real share holders, real clients, aggregator 0 the adversary."""

    def __init__(self, tmp_path: Path, aggregators: int, tls: bool = False, rounds: int = 1) -> None:
        transport = "tls" if tls else "tcp"
        config = {"mode": "secret-sharing", "params": {"aggregators": aggregators, "clip": 4.0}, "transport": transport}
        self.suite = parse_suite(
            {
                "name": "red-team",
                "data": {"dataset": "digits", "clients": CLIENTS},
                "training": {"rounds": rounds},
                "configurations": [config],
                "measure": {"timeout_s": 20, "transcripts": True},
            }
        )
        self.config = self.suite.configurations[0]
        self.params = self.config.mode_params
        assert isinstance(self.params, SecretSharingParams)
        self.step = quantizer(self.params).step
        self.run_dir = tmp_path
        self.creds = RunCredentials(self.config, CLIENTS)
        holders = tuple(f"aggregator-{k}" for k in range(1, aggregators))
        self.folder = tmp_path / "parties"
        if tls:
            parties = ("aggregator", *holders, *(f"client-{i}" for i in range(CLIENTS)))
            make_party_certificates(self.folder, parties, ("aggregator", *holders))
        self.tls = str(self.folder) if tls else None
        self.holders: dict[int, tuple[str, int]] = {}
        self.holder_errors: dict[int, BaseException] = {}
        self.holder_threads: list[threading.Thread] = []
        for k in range(1, aggregators):
            control = Control(k)
            thread = threading.Thread(target=self._holder, args=(k, control), daemon=True)
            thread.start()
            self.holder_threads.append(thread)
            self.holders[k] = control.replies.get(timeout=20)
        rng = np.random.default_rng(3)
        self.updates = [rng.normal(0, 0.5, VALUES).astype(np.float32) for _ in range(CLIENTS)]
        self.later: dict[int, list[np.ndarray]] = {}  # a client's uploads after round 0 (default: round 0's again)
        self.rounds = rounds
        self.opened: dict[int, Opened] = {}  # round 0's aggregate, as each client opened it
        self.opened_later: dict[tuple[int, int], Opened] = {}
        self.client_errors: dict[int, BaseException] = {}
        self.threads: list[threading.Thread] = []

    def _holder(self, k: int, control: Control) -> None:
        try:
            run_share_holder(self._context(f"aggregator-{k}"), control, _Records())
        except Exception as err:  # a refusal: the test reads it
            self.holder_errors[k] = err

    def _context(self, party: str, index: int = -1) -> PartyContext:
        return PartyContext(
            self.suite,
            self.config,
            self.run_dir,
            self.creds.of(party),
            "run",
            0,
            (1, 8, 8),
            10,
            client_index=index,
            tls=self.tls,
        )

    def coordinator(self) -> LyingCoordinator:
        tls = party_tls(self.folder, "aggregator") if self.tls else None
        return LyingCoordinator(self.creds.of("aggregator"), self.params, tls)  # type: ignore[arg-type]

    def start_clients(self, coordinator: tuple[str, int], taps: dict[int, tuple[str, int]] | None = None) -> None:
        """Every client uploads its update and opens the aggregate (each in a thread); ``taps``: where the victim
        reaches aggregator k (0: the coordinator), if not at the aggregator itself (an observer's relay)."""
        for i in range(CLIENTS):
            where = {0: coordinator, **self.holders, **(taps or {} if i == VICTIM else {})}
            wiring = Wiring(None, where[0], None, tuple(where[k] for k in sorted(where) if k))
            thread = threading.Thread(target=self._client, args=(i, wiring), daemon=True)
            thread.start()
            self.threads.append(thread)

    def _client(self, i: int, wiring: Wiring) -> None:
        ctx = dataclasses.replace(self._context(f"client-{i}", i))
        link = share_link(ctx, wiring, SAMPLES[i], PhaseMeter())
        try:
            for rnd in range(self.rounds):
                update = self.updates[i] if rnd == 0 else self.later.get(i, [self.updates[i]] * rnd)[rnd - 1]
                link.upload({"round": rnd, "epoch": 0, "samples": SAMPLES[i]}, [update], None, PhaseMeter())
                opened = link.open(link.channel.recv(), 0, PhaseMeter())
                if rnd == 0:
                    self.opened[i] = opened
                else:
                    self.opened_later[(rnd, i)] = opened
        except Exception as err:  # a refused round: the test reads it
            self.client_errors[i] = err
        finally:
            link.close()

    def finish(self) -> None:
        for thread in [*self.threads, *self.holder_threads]:
            thread.join(timeout=30)

    def holder_shares(self, k: int, client: int) -> np.ndarray:
        """What share holder k received from ``client`` (its transcript: a colluding holder's view)."""
        transcript = self.run_dir / "transcripts" / "secret-sharing" / f"aggregator-{k}-from-client-{client}.bin"
        if not transcript.exists():
            transcript = next(self.run_dir.rglob(f"aggregator-{k}-from-client-{client}.bin"))
        words = np.zeros(VALUES, np.uint64)
        for msg in read_transcript(transcript):
            if msg.kind == MessageKind.SHARE_CHUNK:
                part = np.frombuffer(msg.parts[0], np.uint64)
                words[int(msg.meta["offset"]) : int(msg.meta["offset"]) + len(part)] = part
        return words

    def fedavg_numerator(self, clients: list[int]) -> np.ndarray:
        return sum(SAMPLES[i] * self.updates[i].astype(np.float64) for i in clients)  # type: ignore[return-value]


class _Records:
    def put(self, record) -> None:
        pass


def _error(got: np.ndarray, want: np.ndarray) -> float:
    return float(np.abs(np.asarray(got, np.float64) - want).max())


def _honest_round(r: ShareRound, coordinator: LyingCoordinator, taps=None) -> dict[int, np.ndarray]:
    """Clients upload; the coordinator collects the first shares and streams its sum back, as an honest one does."""
    r.start_clients(coordinator.door.address, taps)
    coordinator.admit(CLIENTS)
    shares = coordinator.first_shares()
    coordinator.send_sums(0, shares)
    r.finish()
    return shares


@pytest.mark.parametrize("tls", [False, True], ids=["tcp", "tls"])
def test_red_team_secret_sharing_share_holders_fewer_than_all_aggregator_0_impersonates_clients(tmp_path, tls):
    """N4 of issue #36: aggregator 0 (k = 1 of K = 2 share holders) tries to take clients 1 and 2's slots at share
    holder 1, to say they left and receive the holder's "sum" of the victim's share alone. Before identity at the
    doors it read the victim's update to 9.4e-7 (one step: 9.5e-7). Now every key it holds (its own, and every
    client's key at its own door), or its certificate, is refused, and its share alone reads nothing."""
    r = ShareRound(tmp_path, aggregators=2, tls=tls)
    adversary = r.coordinator()
    try:
        slots = adversary.impersonate(r.holders[1], "aggregator-1", [1, 2])
        assert slots == {} and len(adversary.attempts) == 2 * len(adversary.keys())
        assert all(not a.admitted for a in adversary.attempts)
        shares = _honest_round(r, adversary)  # the real clients then come in and upload
    finally:
        adversary.close()
    assert set(r.opened) == {0, 1, 2}  # the holder served the real clients, each a whole round
    reading = read_update([shares[VICTIM]], SAMPLES[VICTIM], r.params)
    assert _error(reading, r.updates[VICTIM]) > 1e6 * r.step  # one share: uniform words, nowhere near the update


@pytest.mark.parametrize("tls", [False, True], ids=["tcp", "tls"])
def test_red_team_secret_sharing_share_holders_k_of_K_minus_1_collude(tmp_path, tls):
    """k = 2 of K = 3 (aggregator 0 and holder 1) pool their shares and try holder 2's door with every key they
    hold: refused; their two shares of the victim are still uniform."""
    r = ShareRound(tmp_path, aggregators=3, tls=tls)
    adversary = r.coordinator()
    holder_1 = r.creds.of("aggregator-1")  # the colluding holder's keys join aggregator 0's
    adversary.credentials = dataclasses.replace(
        adversary.credentials, doors={**adversary.credentials.doors, **holder_1.doors}
    )
    try:
        assert adversary.impersonate(r.holders[2], "aggregator-2", [1, 2]) == {}
        shares = _honest_round(r, adversary)
    finally:
        adversary.close()
    pooled = [shares[VICTIM], r.holder_shares(1, VICTIM)]
    assert _error(read_update(pooled, SAMPLES[VICTIM], r.params), r.updates[VICTIM]) > 1e6 * r.step
    # control: with holder 2's share too, the same reading is the update (the next test's cell)
    full = [*pooled, r.holder_shares(2, VICTIM)]
    assert _error(read_update(full, SAMPLES[VICTIM], r.params), r.updates[VICTIM]) <= r.step


def test_red_team_secret_sharing_share_holders_all_K_collude(tmp_path):
    """All K = 3 aggregators pool their shares: every client's update, to one quantisation step."""
    r = ShareRound(tmp_path, aggregators=3)
    adversary = r.coordinator()
    try:
        shares = _honest_round(r, adversary)
    finally:
        adversary.close()
    for i in range(CLIENTS):
        pooled = [shares[i], r.holder_shares(1, i), r.holder_shares(2, i)]
        assert _error(read_update(pooled, SAMPLES[i], r.params), r.updates[i]) <= r.step


def test_red_team_secret_sharing_aggregator(tmp_path):
    """The honest-but-curious coordinator reads one share of each upload: uniform words, never the update."""
    r = ShareRound(tmp_path, aggregators=2)
    adversary = r.coordinator()
    try:
        shares = _honest_round(r, adversary)
    finally:
        adversary.close()
    for i in range(CLIENTS):
        assert _error(read_update([shares[i]], SAMPLES[i], r.params), r.updates[i]) > 1e6 * r.step
        top = np.bincount((shares[i] >> np.uint64(60)).astype(np.int64), minlength=16)
        assert top.min() > 0.5 * VALUES / 16  # the top nibble of a share is spread over all 16 values


def _rebuilt_numerator(r: ShareRound, colluder: int) -> np.ndarray:
    opened = r.opened[colluder]
    return np.asarray(opened.encrypted, np.float64) * sum(SAMPLES)


def test_red_team_secret_sharing_colluding_clients_one(tmp_path):
    """Aggregator 0 and client 1 collude. Impersonating client 2 at the holder (to make it 'leave') is refused, and
    handing client 2 a dead model in round 0 (so that round 1's sum is the victim's alone) is caught by the holder
    before round 1 is summed. What client 1 gets is round 0's sum less its own update: the sum of the other two,
    not the victim's update."""
    zeros = np.zeros(VALUES, np.float32)
    r, _, adversary = _two_rounds_with_offsets(
        tmp_path, np.full(VALUES, -3.0, np.float32), moved=(2,), later={1: [zeros], 2: [zeros]}, impersonate=(2,)
    )
    assert adversary.attempts and all(not a.admitted for a in adversary.attempts)
    others = _rebuilt_numerator(r, 1) - SAMPLES[1] * r.updates[1].astype(np.float64)
    assert _error(others, r.fedavg_numerator([0, 2])) <= 4 * sum(SAMPLES) * r.step  # the sum of n - k: obtained
    assert _error(others / SAMPLES[VICTIM], r.updates[VICTIM]) > 0.5  # no more: the victim's update is not isolated
    _detected(r)  # round 1, where client 2's dead model would have left the victim alone in the sum: refused


def test_red_team_secret_sharing_colluding_clients_all_others(tmp_path):
    """k = n - 1 = 2 clients collude: the rebuilt sum minus both their updates is the victim's."""
    r = ShareRound(tmp_path, aggregators=2)
    adversary = r.coordinator()
    try:
        _honest_round(r, adversary)
    finally:
        adversary.close()
    mine = sum(SAMPLES[i] * r.updates[i].astype(np.float64) for i in (1, 2))
    victim = (_rebuilt_numerator(r, 1) - mine) / SAMPLES[VICTIM]
    assert _error(victim, r.updates[VICTIM]) <= 4 * sum(SAMPLES) * r.step / SAMPLES[VICTIM]


def _two_rounds_with_offsets(
    tmp_path,
    offset: np.ndarray,
    moved: tuple[int, ...],
    later: dict[int, list[np.ndarray]] | None = None,
    impersonate: tuple[int, ...] = (),
) -> tuple[ShareRound, dict[int, np.ndarray], LyingCoordinator]:
    """Round 0: the coordinator (having tried to take the slots of clients ``impersonate`` at the holder) hands
    clients ``moved`` its sum plus ``offset`` (their next model moves by it). Round 1: the clients upload
    (``later``: what each uploads then); the holder checks the clients' digests of round 0's coordinator sum."""
    r = ShareRound(tmp_path, aggregators=2, rounds=2)
    r.later = later or {}
    adversary = r.coordinator()
    try:
        assert adversary.impersonate(r.holders[1], "aggregator-1", list(impersonate)) == {}
        r.start_clients(adversary.door.address)
        adversary.admit(CLIENTS)
        shares = adversary.first_shares()
        adversary.send_sums(0, shares, offsets=dict.fromkeys(moved, offset))
        for thread in r.holder_threads:  # round 1: the holders read the clients' digests of round 0's sum
            thread.join(timeout=30)
    finally:
        adversary.close()
    r.finish()
    return r, shares, adversary


def _detected(r: ShareRound) -> None:
    """The holder refused round 1: the clients saw different coordinator sums in round 0; no client opened
    round 1."""
    assert "different sums in round 0" in str(r.holder_errors.get(1))
    assert not r.opened_later and set(r.client_errors) == {0, 1, 2}


def test_red_team_secret_sharing_malicious_aggregator_model_inconsistency(tmp_path):
    """The coordinator hands the non-victims a model of its choosing (their aggregate moved, e.g. to a dead model),
    the victim the true one: the holders see the clients' digests disagree and sum no further round. Alone it holds
    one share of each upload: nothing."""
    dead = np.full(VALUES, -3.0, np.float32)  # e.g. a bias that switches every unit off
    r, shares, _ = _two_rounds_with_offsets(tmp_path, dead, moved=(1, 2))
    true = r.fedavg_numerator([0, 1, 2]) / sum(SAMPLES)
    assert _error(r.opened[0].encrypted, true) <= 4 * r.step  # the victim got the true aggregate
    assert _error(r.opened[1].encrypted, true + dead) <= 4 * r.step  # the deviation took effect in round 0 ...
    _detected(r)  # ... and was caught before round 1 was summed
    for i in range(CLIENTS):  # what the coordinator reads: one share each
        assert _error(read_update([shares[i]], SAMPLES[i], r.params), r.updates[i]) > 1e6 * r.step


def test_red_team_secret_sharing_malicious_aggregator_trap_weights(tmp_path):
    """Trap weights implanted the same way, in every client's next model: consistent, so not caught, but the
    coordinator's own view of the next uploads is still one share of each: nothing."""
    trap = np.zeros(VALUES, np.float32)
    trap[:64] = 2.0  # an imprint block
    r = ShareRound(tmp_path, aggregators=2, rounds=2)
    rng = np.random.default_rng(9)  # the uploads each client makes from its trapped model
    r.later = {i: [rng.normal(0, 0.5, VALUES).astype(np.float32)] for i in range(CLIENTS)}
    adversary = r.coordinator()
    try:
        r.start_clients(adversary.door.address)
        adversary.admit(CLIENTS)
        shares = adversary.first_shares()
        adversary.send_sums(0, shares, offsets=dict.fromkeys(range(CLIENTS), trap))
        next_shares = adversary.first_shares()  # round 1: the uploads made from the trapped model
        adversary.send_sums(1, next_shares)
        r.finish()
    finally:
        adversary.close()
    assert _error(r.opened[2].encrypted, r.fedavg_numerator([0, 1, 2]) / sum(SAMPLES) + trap) <= 4 * r.step
    assert not r.holder_errors and len(r.opened_later) == CLIENTS  # every client took the trap: no inconsistency
    for i in range(CLIENTS):
        assert _error(read_update([next_shares[i]], SAMPLES[i], r.params), r.later[i][0]) > 1e6 * r.step


def test_red_team_secret_sharing_observer_without_tls(tmp_path):
    """Without TLS an observer on client 0's links reads both shares of its upload off the wire: its update."""
    r = ShareRound(tmp_path, aggregators=2)
    adversary = r.coordinator()
    to_coordinator, to_holder = Tap(adversary.door.address), Tap(r.holders[1])
    try:
        _honest_round(r, adversary, {0: to_coordinator.address, 1: to_holder.address})
    finally:
        adversary.close()
    seen = []
    for tap in (to_coordinator, to_holder):
        words = np.zeros(VALUES, np.uint64)
        for msg in wire_messages(tap.finished()["to listener"]):
            if msg.kind == MessageKind.SHARE_CHUNK:
                part = np.frombuffer(msg.parts[0], np.uint64)
                words[int(msg.meta["offset"]) : int(msg.meta["offset"]) + len(part)] = part
        seen.append(words)
    assert _error(read_update(seen, SAMPLES[VICTIM], r.params), r.updates[VICTIM]) <= r.step
