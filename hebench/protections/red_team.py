"""The red team's contract: how a threat plan obtains its view from the live protocol with the adversary in it.

A mode plugs its adversary into the threats suite from its spec, without touching the attack code: a conduit rule
``ConduitRule(Conduit.RED_TEAM, adversaries, obtains, strategy, view="hebench.protections.<p>.adversary:view")``
names a :data:`RedTeamView`, a function from a :class:`Target` (the configuration, the adversary, the model the
adversary's aggregator hands each client, and how each client trains on what it holds) to what the adversary
obtained (:class:`Seen`). The view runs the real parties (hebench's clients and links, its key authority, the
protection's own servers) on loopback with the lying party among them; nothing in it is a model of the protocol.
:mod:`hebench.inversion.views.conduits` builds the target from an attack plan and turns :class:`Seen` into the
attack's observation. Vectors are flat float32 in the protocol's own units (a client's upload is its trained model).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hebench.config import Configuration, Suite, parse_suite
from hebench.errors import CiphertextError
from hebench.fl.link import Opened
from hebench.fl.meter import PhaseMeter
from hebench.fl.party import Credentials, PartyContext
from hebench.fl.run_credentials import RunCredentials
from hebench.net.messages import MessageKind
from hebench.net.transport import Message
from hebench.protections.threats import Adversary, Strategy


@dataclass(frozen=True)
class Target:
    """What a red-team view is handed: one round's configuration and clients (the victim is client 0)."""

    mode: str
    adapter: str
    params: Mapping[str, Any]
    transport: str  # "tcp" or "tls"
    adversary: Adversary
    strategy: Strategy | None
    k: int  # colluding clients (the round's last k) or share holders
    models: tuple[np.ndarray, ...]  # the global model the adversary's aggregator hands each client
    train: Callable[[int, np.ndarray], np.ndarray]  # client i's upload (its trained model) from the model it holds
    sizes: tuple[int, ...]  # the model's parameter sizes (a per-layer packing's pieces)
    victims: int = 1  # an every-update view is the FedAvg of the first ``victims`` clients' uploads
    encrypted: np.ndarray | None = None  # a selective mask: True where every client encrypts

    @property
    def clients(self) -> int:
        return len(self.models)

    @property
    def colluders(self) -> tuple[int, ...]:
        """The colluding clients: the round's last ``k`` (never the victim)."""
        if self.adversary is not Adversary.COLLUDING_CLIENTS:
            return ()
        return tuple(range(self.clients - self.k, self.clients))


@dataclass(frozen=True)
class Seen:
    """What the adversary obtained of the victims (None: nothing usable), in upload units: the FedAvg of the
    victims' uploads, or where it obtains a sum, that sum's FedAvg of the clients in it."""

    update: np.ndarray | None
    visible: np.ndarray | None = None  # the coordinates it read (True), where it read only some (selective)
    detected: str | None = None  # a defence, or a refusal, that stopped it, in words
    notes: tuple[str, ...] = field(default=())  # what the adversary did, for the record
    clients: int | None = None  # the round's first ``clients`` clients are in what it obtained (None: the victims)


RedTeamView = Callable[[Target], Seen]


def live_suite(
    configuration: Mapping[str, Any], clients: int, timeout_s: float, rounds: int = 1, **sections: Any
) -> Suite:
    """The suite of a red team's live round: ``configuration`` alone, ``clients`` digits clients, ``rounds``
    rounds, the parties' timeout; ``sections`` add to it (``measure`` entries merge with the timeout)."""
    measure = {"timeout_s": timeout_s, **sections.pop("measure", {})}
    return parse_suite(
        {
            "name": "red-team",
            "data": {"dataset": "digits", "clients": clients},
            "training": {"rounds": rounds},
            "configurations": [dict(configuration)],
            "measure": measure,
            **sections,
        }
    )


def live_context(suite: Suite, folder: Path, credentials: Credentials, index: int = -1, **extra: Any) -> PartyContext:
    """A party's context in a red team's live round of ``suite``'s configuration (an 8x8 one-channel model of 10
    classes, as the digits the suite names): ``index`` for a client, ``extra`` for the protocol's own fields."""
    return PartyContext(
        suite, suite.configurations[0], folder, credentials, "red-team", 0, (1, 8, 8), 10, client_index=index, **extra
    )


def upload_and_open(
    link: Any, index: int, rounds: int, train: Callable[[int], np.ndarray], opened: dict[tuple[int, int], Opened]
) -> None:
    """Client ``index``'s honest rounds over ``link``: told to train, it uploads ``train(index)``, opens the answer
    it is sent (kept in ``opened`` by (round, client) as it goes) and acknowledges it."""
    for r in range(rounds):
        link.channel.recv(MessageKind.TRAIN)
        vector = np.asarray(train(index), dtype=np.float32)
        link.upload({"round": r, "epoch": 0, "samples": 1}, [vector], None, PhaseMeter())
        opened[(r, index)] = link.open(link.channel.recv(), 0, PhaseMeter())
        link.channel.send(Message(MessageKind.ACK, {"round": r}))


def public_reading(public: Any, blobs: list[bytes]) -> np.ndarray | None:
    """What an adversary holding only the public key set reads of ``blobs``: nothing, unless it could decrypt."""
    try:
        return np.concatenate([public.decrypt(public.deserialize(b)) for b in blobs])
    except (CiphertextError, ValueError, RuntimeError, AttributeError):  # each library refuses in its own way
        return None


def door_credentials(config: Configuration, clients: int) -> dict[str, Credentials]:
    """Every party's credentials for a red team's live round of ``config``: the local runtime's own doors
    (:class:`~hebench.fl.run_credentials.RunCredentials`), from a fresh secret, by party."""
    creds = RunCredentials(config, clients)
    parties = {p for door in creds.doors.values() for p in (door.keeper, *door.parties)}
    return {party: creds.of(party) for party in sorted(parties)}


class Control:
    """A helper party's control pipe, as the runtime drives it: ``told`` in order on recv, replies kept."""

    def __init__(self, *told: Any) -> None:
        self.told = list(told)
        self.replies: queue.Queue = queue.Queue()

    def recv(self) -> Any:
        return self.told.pop(0)

    def send(self, item: Any) -> None:
        self.replies.put(item)


class PartyThreads:
    """A live round's honest parties, each in a thread: what one raised (a refusal, or a session the lying party
    ended) is kept by party name for the view to read, never raised."""

    def __init__(self) -> None:
        self.errors: dict[str, BaseException] = {}
        self.threads: list[threading.Thread] = []

    def start(self, name: str, body: Callable[..., None], *args: Any) -> None:
        def run() -> None:
            try:
                body(*args)
            except Exception as err:  # the view reads it
                self.errors[name] = err

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        self.threads.append(thread)

    def join(self, timeout_s: float) -> None:
        for thread in self.threads:
            thread.join(timeout=timeout_s)
