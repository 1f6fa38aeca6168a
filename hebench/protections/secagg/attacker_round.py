"""One real SecAgg+ round in this process: hebench's client stages over authenticated loopback channels, against the
honest aggregator or a lying one.

Attacks on secure aggregation use it so that what they obtain is what the protocol gives, not a model of it:
the clients run :class:`~hebench.protections.secagg.client.SecAggClientRound` (masking, Shamir shares, the
refusal rules, the model-consistency check; in the active model with identities from a fresh trusted set-up) in
threads; the aggregator is :func:`~hebench.protections.secagg.server.collect_secagg`, or any ``serve`` function of
the channels (the red team's :mod:`~hebench.protections.secagg.adversary`).
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from hebench.errors import PartyError, PeerClosedError
from hebench.fl.meter import PhaseMeter
from hebench.fl.roster import make_identities
from hebench.net.messages import MessageKind
from hebench.net.transport import Channel, Message, accept, connect, listen
from hebench.protections.secagg.client import SecAggClientRound
from hebench.protections.secagg.params import SecAggParams
from hebench.protections.secagg.server import SecAggResult, collect_secagg

TIMEOUT_S = 60.0


@dataclass(frozen=True)
class RoundOutcome:
    """The aggregator's result (None when the round aborted), and what each client refused, if anything."""

    result: SecAggResult | None
    refusals: dict[int, str]  # client -> the problem it raised
    server_error: str | None = None


@dataclass(frozen=True)
class LiveRound:
    """What ``serve`` returned (None when it raised), and what each client refused, if anything."""

    served: Any
    refusals: dict[int, str]  # client -> the problem it raised (a channel closed under it is no refusal)
    server_error: str | None = None


def live_round(
    vectors: dict[int, np.ndarray],
    samples: dict[int, int],
    params: SecAggParams,
    serve: Callable[[dict[int, Channel]], Any],
    digests: dict[int, bytes] | None = None,
    population: int | None = None,
) -> LiveRound:
    """Client i uploads ``vectors[i]`` (weight ``samples[i]``), holding a global model of digest ``digests[i]``
    (``params.model_check``), in a round drawn for ``population`` clients (default: all of them); ``serve`` is the
    aggregator, given every client's channel."""
    key = secrets.token_bytes(32)
    door = listen(key, tls=None)  # the attack's own loopback round: authenticated TCP, as the run's default
    refusals: dict[int, str] = {}
    lock = threading.Lock()
    identities = make_identities(max(vectors) + 1)  # the trusted set-up (the active model signs with them)

    def client(i: int) -> None:
        channel: Channel | None = None
        try:
            channel = connect(door.address, key, "aggregator", TIMEOUT_S, tls=None)
            channel.send(Message(MessageKind.HELLO, {"client": i}))
            digest = (digests or {}).get(i, b"")
            party = SecAggClientRound(
                i, channel, params, PhaseMeter(), digest, identity=identities[i], population=population
            )
            party.run(vectors[i], samples[i], {})
        except PeerClosedError:
            pass  # the aggregator ended the round (or gave up on this client)
        except PartyError as err:
            with lock:
                refusals[i] = err.problem
        finally:
            if channel is not None:
                channel.close()

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in vectors]
    for t in threads:
        t.start()
    channels: dict[int, Channel] = {}
    try:
        for _ in vectors:
            ch = accept(door, "a client", TIMEOUT_S)
            channels[int(ch.recv(MessageKind.HELLO).meta["client"])] = ch
        served, error = serve(channels), None
    except PartyError as err:
        served, error = None, err.problem
    finally:
        for ch in channels.values():
            ch.close()
        door.close()
    for t in threads:
        t.join(TIMEOUT_S)
    return LiveRound(served, refusals, error)


def secagg_round(
    vectors: dict[int, np.ndarray],
    samples: dict[int, int],
    params: SecAggParams,
    digests: dict[int, bytes] | None = None,
) -> RoundOutcome:
    """Run one honest round with client i uploading ``vectors[i]`` (weight ``samples[i]``) and holding a global model
    of digest ``digests[i]`` (``params.model_check``)."""
    got = live_round(vectors, samples, params, lambda channels: collect_secagg(channels, params, PhaseMeter()), digests)
    return RoundOutcome(got.served, got.refusals, got.server_error)
