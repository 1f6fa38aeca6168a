"""Key holders take the key authority's pushes as they arrive (issue #40): over a link whose socket buffers hold
a few kB, a push of a whole key set completes while the holder waits for the round, with no deep buffers.

The authority pushes an epoch's set, then answers the aggregator, which only then announces the round; a holder
that read its key channel only when the round needed the set deadlocked there (the push half-sent, the
authority blocked in it, the holder waiting for the round)."""

from __future__ import annotations

import socket
import threading
from multiprocessing.connection import Connection

import pytest

from hebench.errors import PartyError
from hebench.fl.keyring import KeyRing
from hebench.net.messages import MessageKind
from hebench.net.transport import Channel, Message
from hebench.protections.decryptor_he.keys import SealedKeys

SMALL = 4096  # bytes asked of SO_SNDBUF / SO_RCVBUF (the kernel doubles it, and keeps a floor of a few kB)
KEY_SET = 2 << 20  # a 2 MB key set: hundreds of times what the buffers hold


def small_link(peer: str) -> tuple[Channel, Channel]:
    """Two ends of a loopback TCP connection whose buffers on both sides are :data:`SMALL`."""
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, SMALL)  # inherited by the accepted socket
    server.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SMALL)
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    dialler = socket.socket()
    dialler.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, SMALL)
    dialler.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SMALL)
    dialler.connect(server.getsockname())
    accepted, _ = server.accept()
    server.close()
    assert dialler.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF) < KEY_SET // 50  # really shallow
    return Channel(Connection(accepted.detach()), "a holder", 20), Channel(Connection(dialler.detach()), peer, 20)


def authority(to_holder: Channel, to_aggregator: Channel, parts: tuple[bytes, ...]) -> None:
    """The key authority's order: push epoch 0's set to the holder, then answer the aggregator."""
    to_holder.send(Message(MessageKind.KEYS, {"epoch": 0, "secret": True, "run": "r"}, parts))
    to_aggregator.send(Message(MessageKind.TRAIN, {"round": 0, "epoch": 0}))  # the round, once keys are out


@pytest.mark.parametrize("holder", ["client", "decryptor-he party"])
def test_a_holder_takes_a_pushed_key_set_while_it_waits_for_the_round_over_shallow_buffers(holder):
    key_set, seal = bytes(range(256)) * (KEY_SET // 256), b"s" * 44
    ka_side, holder_keys = small_link("key authority")
    agg_side, holder_rounds = small_link("aggregator")
    if holder == "client":
        ring = KeyRing(source=holder_keys, timeout_s=20, load=lambda blob: blob)  # type: ignore[arg-type,return-value]
        parts: tuple[bytes, ...] = (key_set,)
    else:
        ring = SealedKeys(holder_keys, load=lambda blob: blob, timeout_s=20)  # type: ignore[arg-type,return-value]
        parts = (key_set, seal)
    pushing = threading.Thread(target=authority, args=(ka_side, agg_side, parts), daemon=True)
    pushing.start()

    round_message = holder_rounds.recv(MessageKind.TRAIN)  # waits for the round, not for the keys

    got = ring.get(int(round_message.meta["epoch"]))
    assert (got if holder == "client" else got[0]) == key_set
    pushing.join(timeout=20)
    assert not pushing.is_alive()
    ring.close()


def test_a_holder_hears_the_authority_hang_up_instead_of_waiting_for_a_set_that_never_comes():
    ka_side, holder_keys = small_link("key authority")
    ring = KeyRing(source=holder_keys, timeout_s=20, load=lambda blob: blob)  # type: ignore[arg-type,return-value]
    ka_side.send(Message(MessageKind.KEYS, {"epoch": 0}, (b"k",)))
    ka_side.close()
    assert ring.get(0) == b"k"  # what arrived stays
    with pytest.raises(PartyError, match="closed the connection"):
        ring.get(1)
