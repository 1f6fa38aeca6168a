"""secagg's network observer: outside every party, it reads the victims' wires to the aggregator in a live round.

:func:`observer_view` is its red-team conduit (:mod:`hebench.protections.red_team`): hebench's SecAgg+ clients and
the honest aggregator's round (:func:`~.server.collect_secagg`), which then streams the unmasked FedAvg back as the
runtime does (plaintext ``aggregate_chunk`` messages, :func:`~hebench.fl.streams.send_aggregate`). The observer
decodes what it tapped: the masked uploads and sealed shares are of no use to it, the aggregate is the round's sum
in the clear; under TLS every byte it saw is a TLS record and it obtains nothing.
"""

from __future__ import annotations

import hashlib

import numpy as np

from hebench.fl.meter import PhaseMeter
from hebench.fl.ring_stream import StreamedAggregate
from hebench.fl.streams import send_aggregate
from hebench.net.messages import MessageKind
from hebench.net.transport import Channel
from hebench.protections.red_team import Seen, Target
from hebench.protections.secagg.attacker_round import live_round
from hebench.protections.secagg.params import SecAggParams
from hebench.protections.secagg.server import collect_secagg
from hebench.protections.selective.split import PLAIN
from hebench.protections.tls.tap import TO_DIALLER, TO_LISTENER, WireTap, messages, only_tls_records

CHUNK_VALUES = 65536  # the runtime's default chunk of a streamed aggregate


def aggregate_on(tap: WireTap) -> np.ndarray | None:
    """The plaintext aggregate streamed to the tapped client (None: none decoded)."""
    chunks = {
        int(m.meta["offset"]): np.asarray(PLAIN.decrypt(PLAIN.deserialize(m.parts[0])), np.float32)
        for m in messages(tap.finished()[TO_DIALLER])
        if m.kind == MessageKind.AGGREGATE_CHUNK
    }
    return np.concatenate([chunks[offset] for offset in sorted(chunks)]) if chunks else None


def observer_view(target: Target) -> Seen:
    """One live SecAgg+ round (TLS as the target's transport) with the victims' wires tapped; the observer reads the
    aggregate the aggregator streams back: the FedAvg of every client of the round."""
    params = SecAggParams.model_validate(dict(target.params))
    models = {i: np.asarray(m, dtype=np.float32) for i, m in enumerate(target.models)}
    vectors = {i: np.asarray(target.train(i, m), dtype=np.float32) for i, m in models.items()}
    digests = {i: hashlib.sha256(m.astype("<f4").tobytes()).digest() for i, m in models.items()}

    def serve(channels: dict[int, Channel]) -> None:
        result = collect_secagg(channels, params, PhaseMeter())

        def blob(start: int, stop: int) -> bytes:
            return PLAIN.serialize(PLAIN.encrypt(result.average_of(start, stop).astype(np.float32)))

        streamed = StreamedAggregate(len(result.total), CHUNK_VALUES, blob)
        send_aggregate(list(channels.values()), streamed, MessageKind.AGGREGATE, {"round": 0}, PhaseMeter())

    victims = tuple(range(target.victims))
    live = live_round(
        vectors, dict.fromkeys(vectors, 1), params, serve, digests, tapped=victims, tls=target.transport == "tls"
    )
    taps = [live.taps[i] for i in victims]
    if all(only_tls_records(tap.finished()[way]) for tap in taps for way in (TO_LISTENER, TO_DIALLER)):
        seen = sum(len(tap.finished()[way]) for tap in taps for way in (TO_LISTENER, TO_DIALLER))
        return Seen(None, notes=(f"{seen} bytes of TLS records, nothing else",))
    read = aggregate_on(taps[0])
    if read is None:
        return Seen(None, detected=live.server_error or next(iter(live.refusals.values()), None))
    return Seen(read, notes=("the unmasked FedAvg, streamed back in the clear",), clients=target.clients)
