"""One live offload run on loopback with the red team's aggregator in it: hebench's engines
(:class:`~.engine.EngineServer`, threads), the key authority's real delivery to them (``dial_engines`` and
``EpochKeys``, with the run's decryption allowance) and the client hosts (:func:`~.link.engine_link`), each party
with its own door keys as the local runtime hands them out; the aggregator's side is the caller's
:class:`~.adversary.LyingAggregator`.

A host uploads ``train(i)`` (the model it trained on what it was handed) each round and opens, through its engine,
the aggregate the aggregator sends it; :class:`OffloadRound` keeps what each host opened, so that a colluding host's
reading of what its engine decrypted can be read. :func:`red_team_view` is offload's red-team conduit
(:mod:`hebench.protections.red_team`).
"""

from __future__ import annotations

import queue
import shutil
import tempfile
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from hebench.crypto import load_adapter
from hebench.fl.allowance import Allowance
from hebench.fl.key_authority import dial_engines
from hebench.fl.key_epochs import EpochKeys
from hebench.fl.link import Opened
from hebench.fl.meter import PhaseMeter
from hebench.fl.party import (
    KEY_AUTHORITY,
    PartyContext,
    Wiring,
    client_party,
    engine_door,
)
from hebench.protections.offload.adversary import LyingAggregator, engine_attempts
from hebench.protections.offload.engine import EngineConfig, EngineServer
from hebench.protections.offload.link import engine_link
from hebench.protections.red_team import (
    Seen,
    Target,
    door_credentials,
    live_context,
    live_suite,
    public_reading,
    upload_and_open,
)

TIMEOUT_S = 30.0


class OffloadRound:
    """Engines, key delivery and hosts of ``clients`` clients of ``config`` (mode, adapter, params) for ``rounds``
    rounds of a model of ``values`` values; the caller plays :attr:`aggregator`."""

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
        self.creds = door_credentials(self.config, clients)  # an engine uploads as its host's proxy, with its key
        self.refused: list[str] = []  # what the engines refused or saw end (their error lines), not logged
        self.engines = [
            EngineServer(
                EngineConfig(authkey=self.creds[f"engine-{i}"].door(engine_door(i)), timeout_s=TIMEOUT_S),
                on_error=self.refused.append,
            )
            for i in range(clients)
        ]
        for engine in self.engines:
            threading.Thread(target=engine.serve_forever, daemon=True).start()
        self.addresses = {i: e.address for i, e in enumerate(self.engines)}
        ka = self._context(KEY_AUTHORITY, allowance=Allowance(0, rounds, values))
        self.key_channels = dial_engines(ka, [self.addresses[i] for i in range(clients)], None)
        _, public = EpochKeys(ka, self.key_channels, queue.Queue(), clients).get(0)  # the secret set to each engine
        self.public = load_adapter(public)
        self.aggregator = LyingAggregator(self.creds["aggregator"], self.public, None, TIMEOUT_S)
        self.opened: dict[tuple[int, int], Opened] = {}
        self.errors: dict[int, BaseException] = {}
        self.threads = [threading.Thread(target=self._host, args=(i,), daemon=True) for i in range(clients)]
        for thread in self.threads:
            thread.start()
        self.aggregator.admit(clients)

    def _context(self, party: str, index: int = -1, allowance: Allowance | None = None) -> PartyContext:
        return live_context(self.suite, self.folder, self.creds[party], index, allowance=allowance)

    def _host(self, i: int) -> None:
        """A real host: its rounds through its engine (told to train, upload, open, acknowledge)."""
        wiring = Wiring(None, self.aggregator.door.address, (self.addresses[i], None))
        link = engine_link(self._context(client_party(i), i), wiring, 1, PhaseMeter())
        try:
            upload_and_open(link, i, self.rounds, self.train, self.opened)
        except Exception as err:  # a refusal ends the host's session: the view reads it
            self.errors[i] = err
        finally:
            link.close()

    @property
    def weights(self) -> dict[int, float]:
        return dict.fromkeys(range(self.clients), 1 / self.clients)

    def close(self) -> None:
        self.aggregator.close()
        for thread in self.threads:
            thread.join(timeout=TIMEOUT_S)
        for channel in self.key_channels:
            channel.close()
        for engine in self.engines:
            engine.close()
        shutil.rmtree(self.folder, ignore_errors=True)


def red_team_view(target: Target) -> Seen:
    """offload: one live round. With colluding clients the aggregator hands the colluder's engine (the round's last
    client's) the victim's upload as the aggregate; the engine cannot tell and decrypts it for its host: the
    victim's update, one per round. Without them (the aggregator alone; a malicious one, whose models the clients
    trained on) it holds ciphertext under a key only the engines hold, and no engine's door opens for any key it
    holds: nothing."""
    config = {"mode": target.mode, "adapter": target.adapter, "params": dict(target.params)}
    live = OffloadRound(config, target.clients, lambda i: target.train(i, target.models[i]), sum(target.sizes))
    agg = live.aggregator
    try:
        everyone = list(range(target.clients))
        agg.start_round(0, everyone)
        uploads = agg.uploads(everyone)
        honest = agg.weighted_sum(uploads, live.weights)
        colluder = target.colluders[-1] if target.colluders else None
        for i in everyone:
            agg.send_aggregate(i, 0, uploads[0] if i == colluder else honest)  # substitute for the colluder
        for i in everyone:
            agg.heard_back(i)
        if colluder is not None:
            opened = live.opened[(0, colluder)]
            note = f"client {colluder}'s engine opened client 0's upload as round 0's aggregate"
            return Seen(np.asarray(opened.encrypted, dtype=np.float32), notes=(note,), clients=1)
        # every key it holds at the victim's engine: as its host and as the key authority, to decrypt or push keys
        victims = {0: live.addresses[0]}
        tried = engine_attempts(
            agg.credentials, victims, "red-team", live.public.export_keys(secret=False), uploads[0][0]
        )
        notes = ("ciphertext under the engines' key", *(f"the engine admitted: {a.what}" for a in tried if a.admitted))
        return Seen(public_reading(live.public, uploads[0]), notes=notes)
    finally:
        live.close()
