"""One real SecAgg+ round in this process: hebench's client and server stages over authenticated loopback channels.

Attacks on secure aggregation use it so that what they obtain is what the protocol gives, not a model of it:
the clients run :class:`~hebench.protections.secagg.client.SecAggClientRound` (masking, Shamir shares, the
refusal rules, the model-consistency check) in threads, the aggregator
:func:`~hebench.protections.secagg.server.collect_secagg`.
"""

from __future__ import annotations

import secrets
import threading
from dataclasses import dataclass

import numpy as np

from hebench.errors import PartyError
from hebench.fl.meter import PhaseMeter
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


def secagg_round(
    vectors: dict[int, np.ndarray],
    samples: dict[int, int],
    params: SecAggParams,
    digests: dict[int, bytes] | None = None,
) -> RoundOutcome:
    """Run one round with client i uploading ``vectors[i]`` (weight ``samples[i]``) and holding a global model of
    digest ``digests[i]`` (``params.model_check``)."""
    key = secrets.token_bytes(32)
    door = listen(key, tls=None)  # the attack's own loopback round: authenticated TCP, as the run's default
    refusals: dict[int, str] = {}
    lock = threading.Lock()

    def client(i: int) -> None:
        channel: Channel | None = None
        try:
            channel = connect(door.address, key, "aggregator", TIMEOUT_S, tls=None)
            channel.send(Message(MessageKind.HELLO, {"client": i}))
            digest = (digests or {}).get(i, b"")
            SecAggClientRound(i, channel, params, PhaseMeter(), digest).run(vectors[i], samples[i], {})
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
        result, error = collect_secagg(channels, params, PhaseMeter()), None
    except PartyError as err:
        result, error = None, err.problem
    finally:
        for ch in channels.values():
            ch.close()
        door.close()
    for t in threads:
        t.join(TIMEOUT_S)
    return RoundOutcome(result, refusals, error)
