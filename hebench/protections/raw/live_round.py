"""One live round of the direct link (raw, host-he) on loopback, with the aggregator's side played by the caller.

The honest parties are hebench's own: the key authority (:func:`~hebench.fl.key_authority.run_key_authority`) and
each client (:class:`~hebench.fl.client.Client` over the mode's link, its key ring and cipher), in threads over
authenticated loopback channels (mutual TLS with ``transport: tls``), as the local runtime wires them. Only the
aggregator is the caller's (:class:`Aggregation` hands it its door and its channel to the key authority): the red
team puts its lying aggregator there (:mod:`hebench.protections.raw.adversary`). A client's model side is the
caller's too: :class:`HeldModel` (its training a given function, so that an attack plan's victims train exactly as
the attack assumes) or hebench's :class:`~hebench.fl.local_model.LocalModel` (real training, DP included).

``tapped`` clients' channels pass a :class:`~hebench.protections.tls.tap.WireTap` (to the aggregator and to the key
authority): what a network observer between them reads. ``colluders`` hand the aggregator their key sets.
"""

from __future__ import annotations

import dataclasses
import multiprocessing as mp
import queue
import shutil
import tempfile
import threading
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

import numpy as np
import torch
from torch import nn

from hebench.config import Configuration, Suite, parse_suite
from hebench.crypto import HEAdapter
from hebench.errors import ParameterError, PartyError
from hebench.fl.cipher import KeyHolderCipher
from hebench.fl.client import Client
from hebench.fl.key_authority import run_key_authority
from hebench.fl.meter import PhaseMeter
from hebench.fl.party import Credentials, PartyContext, Wiring
from hebench.fl.update import load_vector, model_vector
from hebench.net.certs import make_party_certificates
from hebench.net.messages import MessageKind
from hebench.net.transport import Channel, Door, Message, accept, connect, listen
from hebench.protections import KeyHolders
from hebench.protections.spec import resolve
from hebench.protections.tls.tap import WireTap

T = TypeVar("T")
TIMEOUT_S = 60.0
DIRECT = "hebench.fl.link:direct_link"  # the modes whose clients talk to the aggregator itself


class HeldModel:
    """A client's model side whose training is ``train(i, held)``: the model it holds (the last aggregate it
    opened; before any, the run's ``initial`` global model, zeros if none is given) in, its upload out. It plays
    :class:`~hebench.fl.local_model.LocalModel`'s part for :class:`~hebench.fl.client.Client`; its selective mask
    (``encrypted``) is known up front."""

    def __init__(
        self,
        index: int,
        sizes: tuple[int, ...],
        train: Callable[[int, np.ndarray], np.ndarray],
        encrypted: np.ndarray | None = None,
        initial: np.ndarray | None = None,
    ) -> None:
        self.index, self.fn, self.encrypted = index, train, encrypted
        self.model = nn.Module()
        self.model.parts = nn.ParameterList([nn.Parameter(torch.zeros(n)) for n in sizes])
        if initial is not None:
            load_vector(self.model, np.asarray(initial, dtype=np.float32))
        self.samples = 1
        self.held: list[np.ndarray] = []  # every model this client was handed, in order

    def initial_mask(self) -> np.ndarray | None:
        return self.encrypted

    def score_map(self) -> np.ndarray:
        raise PartyError("a red-team client takes its selective mask up front", "use a mask known up front")

    def train(self, round_index: int, *, hold_charge: bool = False) -> tuple[np.ndarray, float]:
        return np.asarray(self.fn(self.index, model_vector(self.model)), dtype=np.float32), 0.0

    def release_charge(self) -> None:
        """Nothing to charge: no DP ledger."""

    def withdraw_charge(self) -> None:
        """Nothing to charge: no DP ledger."""

    def finish_round(
        self,
        channel: Channel,
        r: int,
        vector: np.ndarray,
        weights: dict[str, float],
        meter: PhaseMeter,
        before: tuple[int, int],
        report: dict[str, Any],
        traffic: Callable[[], tuple[int, int]] | None = None,
        ack: dict[str, Any] | None = None,
    ) -> None:
        """Hold the aggregate as the global model, and acknowledge it."""
        vector = np.asarray(vector, dtype=np.float32)
        load_vector(self.model, vector)
        self.held.append(vector.copy())
        channel.send(Message(MessageKind.ACK, {"round": r, **(ack or {})}))


@dataclass
class Aggregation:
    """What the aggregator's side is handed: its context, its door, its channel to the key authority (public keys),
    and the key sets colluding clients hand it."""

    ctx: PartyContext
    door: Door
    ka: Channel
    clients: int
    colluders: Mapping[int, KeyHolderCipher]
    channels: dict[int, Channel] = field(default_factory=dict)  # the clients admitted, by the index they gave

    def admit(self) -> dict[int, Channel]:
        """Every client's channel, by the index its hello gives (as hebench's aggregator admits them)."""
        while len(self.channels) < self.clients:
            ch = accept(self.door, "a client", self.ctx.timeout_s)
            index = int(ch.recv(MessageKind.HELLO).meta["client"])
            ch.peer = f"client {index}"
            self.channels[index] = ch
        return self.channels

    def end(self) -> None:
        """The run is over: every admitted client is told so (one that already left is skipped)."""
        for ch in self.channels.values():
            try:
                ch.send(Message(MessageKind.DONE))
            except (PartyError, OSError):
                pass
            ch.close()

    def key_set(self, client: int, epoch: int) -> HEAdapter:
        """The key set a colluding client holds for ``epoch`` (the one its own cipher fetched from the key
        authority), as it hands it over."""
        return self.colluders[client].adapter(epoch, PhaseMeter())


@dataclass
class LiveRound(Generic[T]):
    """The configuration that ran, what the aggregator's side returned, what each client refused (its error), the
    observer's taps (client i -> {"aggregator": tap, "key-authority": tap}), and the models each client was handed
    (as it opened them)."""

    def held_at(self, client: int, r: int, otherwise: np.ndarray) -> np.ndarray:
        """The model ``client`` held when round ``r`` began (the aggregate of round ``r - 1``)."""
        held = self.held.get(client, [])
        return held[r - 1] if 0 < r <= len(held) else otherwise

    config: Configuration
    served: T | None
    refusals: dict[int, str] = field(default_factory=dict)
    taps: dict[int, dict[str, WireTap]] = field(default_factory=dict)
    held: dict[int, list[np.ndarray]] = field(default_factory=dict)
    server_error: str | None = None


def _credentials(holders: KeyHolders) -> dict[str, Credentials]:
    """Each role's credentials, as the local runtime hands them out (one door key per door)."""
    creds = Credentials.generate()
    return {
        "key-authority": creds.only("key_holder", "public", "engine"),
        "aggregator": creds.only("public", "aggregator"),
        "client": creds.only("key_holder", "aggregator") if holders is KeyHolders.CLIENTS else creds.only("aggregator"),
    }


def run_round(
    config: Mapping[str, Any],
    clients: int,
    serve: Callable[[Aggregation], T],
    local: Callable[[PartyContext], Any],
    *,
    tapped: Collection[int] = (),
    colluders: Collection[int] = (),
    data: Mapping[str, Any] | None = None,
    shape: tuple[tuple[int, int, int], int] = ((1, 8, 8), 10),
    run_dir: Path | None = None,
    timeout_s: float = TIMEOUT_S,
) -> LiveRound[T]:
    """Run ``clients`` honest clients of ``config`` (one configuration as a suite writes it: mode, adapter, params,
    transport, selective) against ``serve``, the aggregator's side, until it returns. ``local(ctx)`` builds each
    client's model side; ``data`` (a suite's data section) is only read by a real :class:`LocalModel`."""
    suite = parse_suite(
        {
            "name": "red-team",
            "data": {"dataset": "digits", **(data or {}), "clients": clients},
            "configurations": [dict(config)],
            "measure": {"timeout_s": timeout_s},
        }
    )
    configuration = suite.configurations[0]
    spec = configuration.spec
    if spec.local_link != DIRECT:
        raise ParameterError(
            f"mode {spec.name}'s clients do not talk to the aggregator directly: no live direct round for it",
            "use the red team of that mode's own package",
        )
    folder = Path(tempfile.mkdtemp(prefix="hebench-red-team-")) if run_dir is None else run_dir
    try:
        return _run(suite, configuration, clients, serve, local, set(tapped), set(colluders), shape, folder)
    finally:
        if run_dir is None:
            shutil.rmtree(folder, ignore_errors=True)


def _run(
    suite: Suite,
    config: Configuration,
    clients: int,
    serve: Callable[[Aggregation], T],
    local: Callable[[PartyContext], Any],
    tapped: set[int],
    colluders: set[int],
    shape: tuple[tuple[int, int, int], int],
    folder: Path,
) -> LiveRound[T]:
    spec = config.spec
    tls = None
    if config.transport == "tls":
        tls = str(folder / "certs")
        servers = ("aggregator", "key-authority")
        make_party_certificates(Path(tls), (*servers, *(f"client-{i}" for i in range(clients))), servers)
    creds = _credentials(spec.key_holders)
    base = PartyContext(suite, config, folder, Credentials(), "red-team", 0, shape[0], shape[1], tls=tls)
    records: queue.Queue = queue.Queue()
    ours, theirs = mp.Pipe()
    authority_ctx = dataclasses.replace(base, credentials=creds["key-authority"])
    authority = threading.Thread(target=run_key_authority, args=(authority_ctx, theirs, records), daemon=True)
    authority.start()
    doors = ours.recv()
    ours.send(([], None))
    agg_ctx = dataclasses.replace(base, credentials=creds["aggregator"])
    door = listen(creds["aggregator"].aggregator, tls=agg_ctx.tls_for("aggregator"))  # type: ignore[arg-type]
    taps: dict[int, dict[str, WireTap]] = {i: {} for i in tapped}
    ciphers: dict[int, KeyHolderCipher] = {}
    refusals: dict[int, str] = {}
    sides: dict[int, Any] = {}
    lock = threading.Lock()

    def address(i: int, name: str, target: Any) -> Any:
        if i not in tapped or target is None:
            return target
        taps[i][name] = WireTap(target)
        return taps[i][name].address

    def client(i: int) -> None:
        ctx = dataclasses.replace(base, client_index=i, credentials=creds["client"])
        holders = doors["key_holder"] if spec.key_holders is KeyHolders.CLIENTS else None
        wiring = Wiring(address(i, "key-authority", holders), address(i, "aggregator", door.address))
        link = None
        try:
            side = sides[i] = local(ctx)
            link = resolve(spec.local_link)(ctx, wiring, side.samples, PhaseMeter())
            if i in colluders:
                with lock:
                    ciphers[i] = link.cipher  # type: ignore[attr-defined]
            Client(ctx, side, link, PhaseMeter(), records).serve()
        except Exception as err:  # a refusal (PartyError), or a failure: the aggregator sees the channel close
            with lock:
                refusals[i] = err.problem if isinstance(err, PartyError) else f"{type(err).__name__}: {err}"
            if link is not None:
                link.close()

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(clients)]
    for t in threads:
        t.start()
    ka = connect(
        doors["public"],
        creds["aggregator"].public,  # type: ignore[arg-type]
        "key authority",
        suite.measure.timeout_s,
        tls=agg_ctx.tls_for("aggregator"),
        server="key-authority",
    )
    ka.send(Message(MessageKind.HELLO, {"role": "aggregator"}))
    served, error = None, None
    aggregation = Aggregation(agg_ctx, door, ka, clients, ciphers)
    try:
        served = serve(aggregation)
    except PartyError as err:
        error = err.problem
    finally:
        aggregation.end()
        ka.send(Message(MessageKind.DONE))
        ka.close()
        door.close()
    for t in threads:
        t.join(suite.measure.timeout_s)
    authority.join(suite.measure.timeout_s)
    for tap in (t for by in taps.values() for t in by.values()):
        tap.finished()
    held = {i: list(getattr(side, "held", [])) for i, side in sides.items()}
    return LiveRound(config, served, refusals, taps, held, error)
