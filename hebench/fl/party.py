"""What every party process shares: its start-up context and error reporting."""

from __future__ import annotations

import logging
import os
import sys
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import numpy as np

from hebench.config import Configuration, Suite
from hebench.errors import HebenchError, PartyError
from hebench.fl.allowance import Allowance
from hebench.fl.roster import ClientIdentity
from hebench.net.certs import TLSFiles, party_tls
from hebench.net.door_keys import DoorKeys
from hebench.results.run_folder import RunFolder

if TYPE_CHECKING:  # only clients hold data, and only they load torch
    from hebench.data.federated import ClientData


Address = tuple[str, int]


# The doors of a run, by name: each admits its parties by their own keys (hebench.net.door_keys)
AGGREGATOR_DOOR = "aggregator"  # uploads: clients (or their offload engines, as their proxies), a mode's helpers
KEY_HOLDERS_DOOR = "key-authority/holders"  # the key authority's door for key holders (host-he, decryptor-he clients)
PUBLIC_DOOR = "key-authority/public"  # the key authority's door for the aggregator (public keys only)
DECRYPTOR_DOOR = "key-authority/decryptor"  # the key authority's door for decryptor-he's decryptor
KEY_AUTHORITY = "key-authority"  # the key authority's party name (its certificates, its key at engine doors)


def client_party(index: int) -> str:
    return f"client-{index}"


def engine_door(index: int) -> str:
    """Offload engine ``index``'s door: its own host and the key authority."""
    return f"engine-{index}"


def client_index(party: str | None) -> int | None:
    """The client a proven party is (``client-3``, or ``engine-3`` uploading as client 3's proxy), else None."""
    for prefix in ("client-", "engine-"):
        if party and party.startswith(prefix) and party[len(prefix) :].isdigit():
            return int(party[len(prefix) :])
    return None


@dataclass(frozen=True)
class Credentials:
    """One party's keys at a run's doors, handed out by the runtime (:class:`~hebench.net.door_keys.DoorKeyIssuer`).

    ``knocks``: this party's own key at each door it may use, bound to it and to that door, so it opens no other
    door and stands for no other party. ``doors``: for each door this party keeps, the keys of the parties the door
    admits. A door learns who a peer is from the key it proves (under TLS, from its certificate), never from what
    it says: an aggregator that asks for the secret set at the key holders' door, or takes a client's slot at a
    share holder's door, fails the handshake. ``hub``: the shared key of Flower's hub server door.
    """

    party: str = ""
    knocks: Mapping[str, bytes] = field(default_factory=dict)
    doors: Mapping[str, DoorKeys] = field(default_factory=dict)
    hub: bytes | None = None

    def key(self, door: str) -> bytes:
        """This party's key at ``door``; PartyError if its role may not use that door."""
        if door not in self.knocks:
            raise PartyError(
                f"{self.party or 'this party'} holds no key for the {door} door", "its role may not use that door"
            )
        return self.knocks[door]

    def door(self, door: str) -> DoorKeys:
        """The keys of the parties ``door`` admits, for the party that keeps it."""
        if door not in self.doors:
            raise PartyError(f"{self.party or 'this party'} does not keep the {door} door", "same hebench?")
        return self.doors[door]


@dataclass(frozen=True)
class Wiring:
    """Where a client's peers listen (sent once all of them are up)."""

    key_authority: Address | None
    aggregator: Address
    engine: tuple[Address, str | None] | None = None  # offload: (engine address, TLS folder)
    helpers: tuple[Address, ...] = ()  # extra aggregators (secret-sharing's share holders 1..K-1)


@dataclass(frozen=True)
class PartyContext:
    """Everything a party needs, handed over at process start (picklable)."""

    suite: Suite
    config: Configuration
    run_dir: Path
    credentials: Credentials
    run_id: str  # names this configuration's run (its key deliveries) on long-lived engines
    start_round: int
    input_shape: tuple[int, int, int]
    num_classes: int
    client_index: int = -1
    data: ClientData | None = None
    test: tuple[Any, Any] | None = None  # (x, y) for the evaluating client
    initial: np.ndarray | None = None  # resumed global model
    cores: tuple[int, ...] | None = None  # pin this party (host side) to these cores
    worker: str | None = None  # the pool worker process hosting this client as a thread (None: its own process)
    tls: str | None = None  # transport: tls: the run's party certificates (None: authenticated TCP)
    identity: ClientIdentity | None = None  # a client's signing key and every client's verification key (roster)
    allowance: Allowance | None = None  # what a party that decrypts for others may open (the key authority hands
    # it to engines with their key sets; decryptor-he's decryptor reads it here)

    @property
    def timeout_s(self) -> float:
        return self.suite.measure.timeout_s

    def tls_for(self, party: str) -> TLSFiles | None:
        """``party``'s certificate for mutual TLS (``aggregator``, ``key-authority``, ``client-N``), or None."""
        return party_tls(self.tls, party)

    def transcript(self, role: str) -> Path | None:
        if not self.suite.measure.transcripts:
            return None
        return RunFolder(self.run_dir).ensure(RunFolder(self.run_dir).transcript(self.config.label, role))


def party_main(
    role: str,
    body: Callable[[PartyContext, Connection, Any], None],
    ctx: PartyContext,
    control: Connection,
    records: Any,
) -> None:
    """Process entry: limit threads, run the party, report a failure as a record.

    Only clients load PyTorch (pinned to one thread): the aggregator and the key authority never
    import it, which saves each of them about 400 MB.
    """
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    if ctx.cores:
        os.sched_setaffinity(0, set(ctx.cores))
    if ctx.client_index >= 0:
        import torch

        torch.set_num_threads(1)
    try:
        body(ctx, control, records)
    except BaseException as err:  # report, then die: the runner turns this into a PartyError
        report_error(role, err, records)
        raise SystemExit(1) from None
    end_now(records)


def end_now(records: Any) -> NoReturn:
    """End a party that finished its work: its records flushed, then out without Python's interpreter shutdown.

    Tearing down torch, the HE contexts and their threads took seconds per party under load, after the
    run's last record; nothing is left to write by then (transcripts are flushed frame by frame).
    """
    if hasattr(records, "join_thread"):  # a multiprocessing queue: its feeder thread must deliver first
        records.close()
        records.join_thread()
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def report_error(role: str, err: BaseException, records: Any) -> None:
    """A party's failure as a ``party_error`` record (problem and fix; a trace for unexpected errors)."""
    if isinstance(err, HebenchError):
        records.put({"kind": "party_error", "role": role, "problem": err.problem, "fix": err.fix})
        return
    records.put(
        {
            "kind": "party_error",
            "role": role,
            "problem": f"{type(err).__name__}: {err}",
            "fix": "",
            "trace": traceback.format_exc(),
        }
    )
