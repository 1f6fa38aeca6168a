"""The red team's network observer: outside every party, it reads the wire between the victims and the parties they
talk to, and nothing else.

:func:`observe` decodes what it tapped (:mod:`hebench.protections.tls.tap`): the victim's upload (its frames on the
way to the aggregator) and any key set that crossed the wire to the victim (the key authority's push), and reads the
upload with the best key it found: a secret set read off the wire, else the plain adapter's (raw's updates). Under
TLS the taps hold TLS records only; nothing decodes and it obtains nothing. :func:`observer_view` is the observer's
red-team conduit for the direct-link modes (raw, host-he).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hebench.crypto import HEAdapter, load_adapter
from hebench.errors import HebenchError
from hebench.fl.streams import whole_updates
from hebench.net.messages import MessageKind
from hebench.protections.raw.adversary import (
    Read,
    Upload,
    clients_of,
    configuration,
    in_model_units,
    lying,
    read_upload,
    victims_mean,
)
from hebench.protections.raw.live_round import run_round
from hebench.protections.red_team import Seen, Target
from hebench.protections.selective.split import PLAIN, parts_of
from hebench.protections.tls.tap import TO_DIALLER, TO_LISTENER, WireTap, messages, only_tls_records


@dataclass(frozen=True)
class Wire:
    """What the observer decoded off one client's wires: its uploads (in order), the key sets pushed to it, and
    whether every byte it saw was a TLS record."""

    uploads: tuple[Upload, ...]
    key_sets: tuple[bytes, ...]
    tls_only: bool
    seen: int  # bytes tapped, both ways, every wire


def decode_wires(taps: dict[str, WireTap]) -> Wire:
    """Decode a client's taps (``aggregator``, ``key-authority``) as an observer who knows hebench's wire format."""
    streams = [tap.finished() for tap in taps.values()]
    uploads: list[Upload] = []
    keys: list[bytes] = []
    if "aggregator" in taps:
        for msg in whole_updates(messages(taps["aggregator"].finished()[TO_LISTENER])):
            cipher, plain = parts_of(msg.parts, int(msg.meta.get("plain_parts", 0)))
            uploads.append(Upload(msg.meta, cipher, plain))
    if "key-authority" in taps:
        pushed = messages(taps["key-authority"].finished()[TO_DIALLER])
        keys = [m.parts[0] for m in pushed if m.kind == MessageKind.KEYS]
    tls_only = all(only_tls_records(s[way]) for s in streams for way in (TO_LISTENER, TO_DIALLER))
    return Wire(tuple(uploads), tuple(keys), tls_only, sum(len(s[w]) for s in streams for w in s))


def best_key(wire: Wire) -> HEAdapter:
    """A secret key set read off the wire, if one crossed it in the clear; else the plain adapter's (it reads a
    plaintext update, and nothing else)."""
    for blob in wire.key_sets:
        try:
            keys = load_adapter(blob)
        except HebenchError:
            continue
        if keys.has_secret_key:
            return keys
    return PLAIN


def observe(wire: Wire, encrypted: np.ndarray | None = None) -> Read:
    """What the observer reads of the last upload on ``wire`` (nothing when it decoded none)."""
    if not wire.uploads:
        return Read(None)
    return read_upload(wire.uploads[-1], best_key(wire), encrypted)


def observer_view(target: Target) -> Seen:
    """A live direct round with the victims' channels tapped; the observer reads what it decodes off them."""
    victims = range(target.victims)
    live = run_round(
        configuration(target),
        target.clients,
        lying(target),
        clients_of(target),
        tapped=victims,
    )
    if live.served is None:
        return Seen(None, detected=live.server_error or next(iter(live.refusals.values()), None))
    played = live.served
    wires = [decode_wires(live.taps[i]) for i in victims]
    if all(w.tls_only for w in wires):
        return Seen(None, notes=(f"{sum(w.seen for w in wires)} bytes of TLS records, nothing else",))
    reads = [
        in_model_units(
            observe(w, target.encrypted), live.config, live.held_at(i, played.round, target.models[0]), target.sizes
        )
        for i, w in zip(victims, wires, strict=True)
    ]
    return victims_mean(reads)
