"""One live secret-sharing round on loopback with the red team's aggregator 0 in it: hebench's share holders
(:func:`~.holder.run_share_holder`, aggregators 1 … K - 1, keeping what each client sent them) and clients
(:func:`~.link.share_link`) in threads, each with its own door keys as the local runtime hands them out; aggregator 0
is the caller's :class:`~.adversary.LyingCoordinator`.

A client uploads ``train(i)`` (the model it trained on what it was handed) and opens the aggregate it rebuilds from
the K sums. :func:`red_team_view` is secret sharing's red-team conduit (:mod:`hebench.protections.red_team`);
:func:`observer_view` the network observer's, on taps of the victims' wires to the K aggregators (TLS or not).
"""

from __future__ import annotations

import shutil
import tempfile
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from hebench.errors import PartyError
from hebench.fl.link import Opened
from hebench.fl.meter import PhaseMeter
from hebench.fl.party import PartyContext, Wiring, client_party
from hebench.net.certs import make_party_certificates, party_tls
from hebench.net.messages import MessageKind
from hebench.net.transport import Message, read_transcript
from hebench.protections.red_team import PartyThreads, Seen, Target, door_credentials, live_context, live_suite
from hebench.protections.sharing.adversary import LyingCoordinator, read_update
from hebench.protections.sharing.holder import run_share_holder
from hebench.protections.sharing.link import share_link
from hebench.protections.sharing.params import SecretSharingParams
from hebench.protections.threats import Adversary
from hebench.protections.tls.tap import TO_DIALLER, TO_LISTENER, WireTap, messages, only_tls_records

TIMEOUT_S = 30.0


class _Control:
    """A share holder's control pipe, as the runtime drives it: its index on recv, its door's address kept."""

    def __init__(self, index: int) -> None:
        self.index, self.address = index, threading.Event()
        self.reply: Any = None

    def recv(self) -> int:
        return self.index

    def send(self, item: Any) -> None:
        self.reply = item
        self.address.set()


class _Records:
    def put(self, record: Any) -> None:
        """A share holder's security notes: not kept."""


class ShareRound:
    """The K - 1 share holders and ``clients`` clients of ``config`` (mode, params; its transport, mutual TLS or
    not) for one round; the caller plays aggregator 0 (:attr:`coordinator`). The ``tapped`` clients reach each
    aggregator through a :class:`~hebench.protections.tls.tap.WireTap` (a network observer's view)."""

    def __init__(
        self,
        config: Mapping[str, Any],
        clients: int,
        train: Callable[[int], np.ndarray],
        tapped: tuple[int, ...] = (),
    ) -> None:
        self.suite = live_suite(
            {"transport": "tcp", **config},
            clients,
            TIMEOUT_S,
            measure={"transcripts": True},  # a colluding holder's view: what it got
            runtime={"chunk_values": 4096},  # the chunks aggregator 0 streams its sum in
        )
        self.config, self.clients, self.train = self.suite.configurations[0], clients, train
        params = self.config.mode_params
        assert isinstance(params, SecretSharingParams)
        self.params = params
        self.folder = Path(tempfile.mkdtemp(prefix="hebench-red-team-"))
        everyone = tuple(client_party(i) for i in range(clients))
        names = [f"aggregator-{k}" for k in range(1, params.aggregators)]
        self.tls = None
        if self.config.transport == "tls":
            self.tls = str(self.folder / "parties")
            make_party_certificates(Path(self.tls), ("aggregator", *names, *everyone), ("aggregator", *names))
        self.creds = door_credentials(self.config, clients)
        self.holders: dict[int, tuple[str, int]] = {}
        self.parties = PartyThreads()
        self.errors = self.parties.errors  # by party: what each honest party refused or saw end
        for k in range(1, params.aggregators):
            control = _Control(k)
            self.parties.start(
                f"aggregator-{k}", run_share_holder, self._context(f"aggregator-{k}"), control, _Records()
            )
            control.address.wait(TIMEOUT_S)
            self.holders[k] = control.reply
        self.coordinator = LyingCoordinator(
            self.creds["aggregator"], params, party_tls(self.tls, "aggregator"), TIMEOUT_S
        )
        self.tapped = tapped
        self.taps: dict[int, list[WireTap]] = {}  # a tapped client's wire to each aggregator, 0 first
        self.opened: dict[int, Opened] = {}
        self.wait_s = TIMEOUT_S  # how long :meth:`close` waits for each party to end

    def _context(self, party: str, index: int = -1) -> PartyContext:
        return live_context(self.suite, self.folder, self.creds[party], index, tls=self.tls)

    def start_clients(self) -> None:
        aggregators = [self.coordinator.door.address, *(self.holders[k] for k in sorted(self.holders))]
        for i in range(self.clients):
            where = aggregators
            if i in self.tapped:
                self.taps[i] = [WireTap(address) for address in aggregators]
                where = [tap.address for tap in self.taps[i]]
            self.parties.start(client_party(i), self._client, i, Wiring(None, where[0], None, tuple(where[1:])))

    def _client(self, i: int, wiring: Wiring) -> None:
        link = share_link(self._context(client_party(i), i), wiring, 1, PhaseMeter())
        try:
            vector = np.asarray(self.train(i), dtype=np.float32)
            link.upload({"round": 0, "epoch": 0, "samples": 1}, [vector], None, PhaseMeter())
            self.opened[i] = link.open(link.channel.recv(), 0, PhaseMeter())
        except Exception as err:  # a refusal: the view reads it
            self.errors[client_party(i)] = err
            raise
        finally:
            link.close()

    def holder_shares(self, k: int, client: int, values: int) -> np.ndarray:
        """What share holder ``k`` received from ``client`` (its transcript: a colluding holder's view)."""
        (transcript,) = self.folder.rglob(f"aggregator-{k}-from-client-{client}.bin")
        words = np.zeros(values, np.uint64)
        for msg in read_transcript(transcript):
            if msg.kind == MessageKind.SHARE_CHUNK:
                part = np.frombuffer(msg.parts[0], np.uint64)
                words[int(msg.meta["offset"]) : int(msg.meta["offset"]) + len(part)] = part
        return words

    def close(self) -> None:
        self.coordinator.close()
        self.parties.join(self.wait_s)
        shutil.rmtree(self.folder, ignore_errors=True)


def red_team_view(target: Target) -> Seen:
    """secret sharing: one live round, aggregator 0 collecting each client's first share and streaming its sum back.
    Share holders: aggregator 0 and holders 1 … k - 1 pool their shares of each victim (every update once all K
    do; fewer read uniform words: nothing), after aggregator 0 tried to take the other clients' slots at holder k
    with every key it holds (to make them "leave", so that the holder's sum is the victim's share alone).
    Colluding clients (the round's last k) rebuild the aggregate and subtract their own uploads: the mean of the
    others. The aggregator alone, or lying about the models, holds one share of each
    upload: nothing."""
    config = {"mode": target.mode, "adapter": target.adapter, "params": dict(target.params)}
    vectors = {i: np.asarray(target.train(i, target.models[i]), dtype=np.float32) for i in range(target.clients)}
    live = ShareRound(config, target.clients, lambda i: vectors[i])
    agg, values = live.coordinator, sum(target.sizes)
    try:
        notes: tuple[str, ...] = ()
        honest = target.k  # aggregators 0 … k - 1 collude: holder k is the first honest one
        if target.adversary is Adversary.SHARE_HOLDERS and honest in live.holders:
            slots = agg.impersonate(live.holders[honest], f"aggregator-{honest}", list(range(1, target.clients)))
            refused = sum(not a.admitted for a in agg.attempts)
            tried = f"aggregator 0 tried {len(agg.attempts)} keys for client slots at holder {honest}"
            notes = (f"{tried}: {refused} refused",)
            notes += tuple(f"holder {honest} admitted aggregator 0 as client {i}" for i in slots)
        live.start_clients()
        try:
            agg.admit(target.clients)
            shares = agg.first_shares()
            agg.send_sums(0, shares)
        except PartyError as err:  # a client refused its upload (e.g. a model beyond the range the shares carry)
            agg.close()  # the others' sessions end with it
            live.wait_s = 2.0  # a client already admitted ends at its own timeout (a daemon thread)
            live.parties.join(live.wait_s)
            why = "; ".join(f"{name} refused: {error}" for name, error in sorted(live.errors.items()))
            return Seen(None, detected=why or err.problem, notes=notes)
        live.parties.join(TIMEOUT_S)
        if target.adversary is Adversary.SHARE_HOLDERS:
            if target.k < live.params.aggregators:
                return Seen(None, notes=(*notes, f"{target.k} of {live.params.aggregators} shares: uniform words"))
            reads = []
            for i in range(target.victims):
                pooled = [shares[i], *(live.holder_shares(k, i, values) for k in sorted(live.holders))]
                reads.append(read_update(pooled, 1, live.params))
            return Seen(np.mean(reads, axis=0).astype(np.float32), notes=notes)
        if target.colluders:
            rebuilt = np.asarray(live.opened[target.colluders[-1]].encrypted, np.float64) * target.clients
            others = target.clients - len(target.colluders)
            mean = (rebuilt - sum(vectors[c].astype(np.float64) for c in target.colluders)) / others
            return Seen(mean.astype(np.float32), clients=others)
        return Seen(None, notes=("aggregator 0 holds one share of each upload: uniform words",))
    finally:
        live.close()


def _shares_on(tap: WireTap, values: int) -> np.ndarray | None:
    """The share a client streamed through ``tap`` (None: nothing decoded: TLS records only)."""
    found: list[Message] = [m for m in messages(tap.finished()[TO_LISTENER]) if m.kind == MessageKind.SHARE_CHUNK]
    if not found:
        return None
    words = np.zeros(values, np.uint64)
    for msg in found:
        part = np.frombuffer(msg.parts[0], np.uint64)
        words[int(msg.meta["offset"]) : int(msg.meta["offset"]) + len(part)] = part
    return words


def observer_view(target: Target) -> Seen:
    """secret sharing's network observer: one live round (TLS as the target's transport) with the victims' wires to
    all K aggregators tapped; without TLS it reads every share of each victim's upload, and their sum is the update;
    under TLS it holds TLS records only: nothing."""
    config = {"mode": target.mode, "adapter": target.adapter, "params": dict(target.params)}
    vectors = {i: np.asarray(target.train(i, target.models[i]), dtype=np.float32) for i in range(target.clients)}
    victims = tuple(range(target.victims))
    live = ShareRound({**config, "transport": target.transport}, target.clients, lambda i: vectors[i], victims)
    agg, values = live.coordinator, sum(target.sizes)
    try:
        live.start_clients()
        agg.admit(target.clients)
        agg.send_sums(0, agg.first_shares())
        live.parties.join(TIMEOUT_S)
    finally:
        live.close()
    taps = [tap for i in victims for tap in live.taps[i]]
    if all(only_tls_records(tap.finished()[way]) for tap in taps for way in (TO_LISTENER, TO_DIALLER)):
        seen = sum(len(tap.finished()[way]) for tap in taps for way in (TO_LISTENER, TO_DIALLER))
        return Seen(None, notes=(f"{seen} bytes of TLS records, nothing else",))
    reads = []
    for i in victims:
        shares = [_shares_on(tap, values) for tap in live.taps[i]]
        if any(share is None for share in shares):
            return Seen(None, notes=(f"not every share of client {i}'s upload decoded off the wire",))
        reads.append(read_update(shares, 1, live.params))  # type: ignore[arg-type]
    return Seen(np.mean(reads, axis=0).astype(np.float32))
