"""What every party process shares: its start-up context and error reporting."""

from __future__ import annotations

import logging
import os
import secrets
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import numpy as np

from hebench.config import Configuration, Suite
from hebench.errors import HebenchError
from hebench.fl.roster import ClientIdentity
from hebench.net.certs import TLSFiles, party_tls
from hebench.results.run_folder import RunFolder

if TYPE_CHECKING:  # only clients hold data, and only they load torch
    from hebench.data.federated import ClientData


Address = tuple[str, int]


@dataclass(frozen=True)
class Credentials:
    """Shared secrets of a run's doors; each party is handed only those of the doors its role may use.

    The key authority has two doors: key holders (secret key sets) and the aggregator (public keys
    only). A party is admitted by the door's credential, not by what it says it is, so an
    aggregator that asks for the secret set at the holders' door fails the handshake.
    """

    key_holder: bytes | None = None  # the key authority's door for key holders (host-he clients)
    public: bytes | None = None  # the key authority's door for the aggregator
    aggregator: bytes | None = None  # the aggregator's door for uploads (clients, or engines as their proxies)
    engine: bytes | None = None  # local offload engines run without TLS

    @classmethod
    def generate(cls) -> Credentials:
        return cls(*(secrets.token_bytes(32) for _ in range(4)))

    def only(self, *doors: str) -> Credentials:
        """The same credentials with every door but ``doors`` removed."""
        return Credentials(**{name: getattr(self, name) if name in doors else None for name in _DOORS})


_DOORS = ("key_holder", "public", "aggregator", "engine")


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
    input_shape: tuple[int, ...]
    num_classes: int  # text: the vocabulary's size
    client_index: int = -1
    data: ClientData | None = None
    test: tuple[Any, Any] | None = None  # (x, y) for the evaluating client
    initial: np.ndarray | None = None  # resumed global model
    cores: tuple[int, ...] | None = None  # pin this party (host side) to these cores
    worker: str | None = None  # the pool worker process hosting this client as a thread (None: its own process)
    tls: str | None = None  # transport: tls: the run's party certificates (None: authenticated TCP)
    identity: ClientIdentity | None = None  # a client's signing key and every client's verification key (roster)
    end_of_text: int | None = None  # text: the vocabulary's <|endoftext|> id

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
