"""One live decryptor-he run on loopback with the red team's aggregator in it: hebench's key authority
(:func:`~hebench.fl.key_authority.run_key_authority`), its decryptor (:func:`~.decryptor.run_decryptor`, with the
run's decryption allowance) and clients (:func:`~.link.decryptor_link`) in threads, each with its own door keys as
the local runtime hands them out; the aggregator's side is the caller's :class:`~.adversary.LyingAggregator`.

A client uploads ``train(i)`` (the model it trained on what it was handed) each round and opens the sealed answer the
aggregator relays; :class:`DecryptorRound` keeps what each client opened, so that a colluding client's share of what
the decryptor answered can be read. :func:`red_team_view` is decryptor-he's red-team conduit
(:mod:`hebench.protections.red_team`).
"""

from __future__ import annotations

import queue
import shutil
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from hebench.fl.allowance import Allowance
from hebench.fl.key_authority import run_key_authority
from hebench.fl.link import Opened
from hebench.fl.meter import PhaseMeter
from hebench.fl.party import (
    KEY_AUTHORITY,
    PartyContext,
    Wiring,
    client_party,
)
from hebench.protections.decryptor_he.adversary import LyingAggregator
from hebench.protections.decryptor_he.decryptor import run_decryptor
from hebench.protections.decryptor_he.link import decryptor_link
from hebench.protections.red_team import (
    Control,
    PartyThreads,
    Seen,
    Target,
    door_credentials,
    live_context,
    live_suite,
    public_reading,
    upload_and_open,
)

DECRYPTOR = "aggregator-1"  # the decryptor's party name (the aggregator's first helper)
TIMEOUT_S = 30.0


class DecryptorRound:
    """The key authority, the decryptor and ``clients`` clients of ``config`` (mode, adapter, params) for
    ``rounds`` rounds of a model of ``values`` values; the caller plays :attr:`aggregator`."""

    def __init__(
        self,
        config: Mapping[str, Any],
        clients: int,
        train: Callable[[int], np.ndarray],
        values: int,
        rounds: int = 1,
    ) -> None:
        self.suite = live_suite({**config, "transport": "tcp"}, clients, TIMEOUT_S, rounds)
        self.config, self.clients, self.rounds, self.train = self.suite.configurations[0], clients, rounds, train
        self.folder = Path(tempfile.mkdtemp(prefix="hebench-red-team-"))
        self.creds = door_credentials(self.config, clients)
        self.allowance = Allowance(0, rounds, values)
        self.parties = PartyThreads()
        self.errors = self.parties.errors  # by party: what each honest party refused or saw end
        self.opened: dict[tuple[int, int], Opened] = {}
        ka = Control(None)
        self.parties.start(KEY_AUTHORITY, run_key_authority, self._context(KEY_AUTHORITY), ka, queue.Queue())
        self.doors = ka.replies.get(timeout=TIMEOUT_S)
        self.aggregator = LyingAggregator(self.creds["aggregator"], None, TIMEOUT_S)
        wiring = Wiring(self.doors["decryptor"], self.aggregator.door.address)
        self.parties.start(DECRYPTOR, run_decryptor, self._context(DECRYPTOR), Control(1, wiring), queue.Queue())
        for i in range(clients):
            self.parties.start(client_party(i), self._client, i)
        self.aggregator.admit(clients)
        self.public = self.aggregator.keys(self.doors["public"])

    def _context(self, party: str, index: int = -1) -> PartyContext:
        return live_context(self.suite, self.folder, self.creds[party], index, allowance=self.allowance)

    def _client(self, i: int) -> None:
        """A real client: told to train, it uploads under the public set and opens the sealed answer."""
        wiring = Wiring(self.doors["key_holder"], self.aggregator.door.address)
        link = decryptor_link(self._context(client_party(i), i), wiring, 1, PhaseMeter())
        try:
            upload_and_open(link, i, self.rounds, self.train, self.opened)
        finally:
            link.close()

    @property
    def weights(self) -> dict[int, float]:
        return dict.fromkeys(range(self.clients), 1 / self.clients)

    def close(self) -> None:
        self.aggregator.close()
        self.parties.join(TIMEOUT_S)
        shutil.rmtree(self.folder, ignore_errors=True)


def red_team_view(target: Target) -> Seen:
    """decryptor-he: one live round. With colluding clients the aggregator hands the decryptor the victim's upload
    as the round's aggregate and relays the sealed answer; the colluder (the round's last client) opens it: the
    victim's update, one per round. Without them (the aggregator alone; a malicious one, whose models the clients
    trained on) it holds ciphertext and a sealed answer, and none of its keys opens the key authority's doors for
    the seal or the secret set: nothing."""
    config = {"mode": target.mode, "adapter": target.adapter, "params": dict(target.params)}
    live = DecryptorRound(config, target.clients, lambda i: target.train(i, target.models[i]), sum(target.sizes))
    agg = live.aggregator
    try:
        agg.start_round(0)
        uploads = agg.uploads()
        colluders = target.colluders
        if colluders:
            agg.relay(0, agg.ask(uploads[0]), live.weights)  # substitute: the victim's upload as the aggregate
            opened = live.opened[(0, colluders[-1])]
            note = f"the decryptor opened client 0's upload as round 0's aggregate; client {colluders[-1]} read it"
            return Seen(np.asarray(opened.encrypted, dtype=np.float32), notes=(note,), clients=1)
        agg.relay(0, agg.ask(agg.weighted_sum(uploads, live.weights)), live.weights)
        read = public_reading(live.public, uploads[0])
        opened = agg.knock(live.doors["key_holder"], KEY_AUTHORITY, ("aggregator", client_party(0)))
        opened += agg.knock(live.doors["decryptor"], KEY_AUTHORITY, ("aggregator", DECRYPTOR))
        notes = ("ciphertext under the public set, a sealed answer", *(f"a door opened: {o}" for o in opened))
        return Seen(read, notes=notes)
    finally:
        live.close()
