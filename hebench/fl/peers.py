"""Who came in at a door: parties known by the identity they proved, never by what their hello says.

A door that admits by party (:class:`~hebench.net.door_keys.DoorKeys`) hands out channels that carry the party
the peer proved to be (its own key, or its certificate). :func:`admit_parties` takes the first ``count``
distinct parties so proven; a peer whose hello claims to be someone else, or a party that is already in, is
turned away (told, closed and logged), not counted, so no peer takes another's place or a second place.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from hebench.errors import PartyError
from hebench.fl.party import client_index
from hebench.net.messages import MessageKind
from hebench.net.transport import Channel, Door, Message, accept

log = logging.getLogger("hebench.net")


@dataclass(frozen=True)
class Arrival:
    """A party that came in: its channel (``channel.party``: who it proved to be) and its hello."""

    channel: Channel
    hello: Message


def proven_client(channel: Channel, hello: Message) -> int:
    """The client ``channel``'s peer proved to be; PartyError if it is no client, or its hello names another."""
    index = client_index(channel.party)
    if index is None:
        raise PartyError(f"'{channel.party}' is not a client", "only a client's own key (or certificate) opens this")
    named = hello.meta.get("client")
    if named is not None and str(named) != str(index):
        raise PartyError(
            f"'{channel.party}' said it is client {named}", "a party speaks for itself only: same hebench?"
        )
    return index


def admit_parties(
    door: Door, count: int, timeout_s: float, what: str, identify: Callable[[Channel, Message], int | str]
) -> dict[int | str, Arrival]:
    """The first ``count`` distinct parties at ``door``, by ``identify(channel, hello)`` (raising PartyError for a
    peer that does not belong); each new peer gets ``timeout_s`` to arrive."""
    arrived: dict[int | str, Arrival] = {}
    while len(arrived) < count:
        channel = accept(door, what, timeout_s)
        try:
            hello = channel.recv(MessageKind.HELLO)
            who = identify(channel, hello)
            if who in arrived:
                raise PartyError(f"'{channel.party}' came in a second time", "each party connects once")
        except PartyError as err:
            log.warning("turned away a peer at the %s: %s", what, err.problem)
            channel.tell_error(what, err)
            channel.close()
            continue
        arrived[who] = Arrival(channel, hello)
    return arrived
