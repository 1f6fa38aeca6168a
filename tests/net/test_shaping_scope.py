"""Which channels are shaped: every channel a party opens in a shaped run, and none may slip past."""

from __future__ import annotations

import os
import socket
import threading
from multiprocessing import Pipe

import pytest

from hebench.config import NetworkSpec
from hebench.errors import PartyError
from hebench.links.plan import plan_network
from hebench.net.shaping import scope
from hebench.net.shaping.scope import ShapingSetup
from hebench.net.shaping.wire import ShapedConnection
from hebench.net.stream import FramedSocket
from hebench.net.transport import Channel


@pytest.fixture
def shaped_process():
    plan = plan_network(NetworkSpec.model_validate({"clients": {"profile": "lte"}}), clients=2, seed=0)
    scope.activate(ShapingSetup(plan, pace=False, delays=False), None)  # a pool worker: threads bind their own
    yield plan
    scope.deactivate()


def test_outside_a_shaped_run_channels_are_left_as_they_are():
    a, _ = Pipe()
    assert Channel(a, "peer", 1.0).conn is a


def test_a_channel_opened_outside_any_party_fails_instead_of_bypassing_the_shaper(shaped_process):
    a, _ = Pipe()
    with pytest.raises(PartyError, match="bypass the network shaper"):
        Channel(a, "the aggregator", 1.0)


def test_a_bound_thread_opens_channels_on_its_own_link(shaped_process):
    a, _ = Pipe()
    with scope.bound("client-1"):
        ch = Channel(a, "the aggregator", 1.0)
        assert scope.compute_slowdown() == 1.0
    assert isinstance(ch.conn, ShapedConnection) and ch.conn.shaper.party.party == "client-1"
    assert ch.conn.shaper.party.link.name == "lte"
    seen: list[object] = []
    worker = threading.Thread(target=lambda: seen.append(scope.current()))  # another thread: not bound
    worker.start()
    worker.join()
    assert seen == [None]


def test_the_engine_of_a_client_is_on_that_clients_link_and_server_parties_on_the_servers(shaped_process):
    plan = shaped_process
    assert plan.for_party("engine-1").link == plan.for_party("client-1").link
    for party in ("aggregator", "aggregator-2", "key_authority"):
        assert plan.for_party(party).side == "server" and plan.for_party(party).link == plan.server


def test_tiers_split_the_clients_by_share_with_their_slowdown():
    spec = NetworkSpec.model_validate(
        {
            "tiers": [
                {"share": 0.6, "profile": "lte", "compute_slowdown": 3},
                {"share": 0.4, "link": {"uplink_mbit": 50, "downlink_mbit": 200}},
            ]
        }
    )
    plan = plan_network(spec, clients=10, seed=4)
    tiers = [c.tier for c in plan.clients]
    assert tiers.count(0) == 6 and tiers.count(1) == 4
    assert {c.compute_slowdown for c in plan.clients if c.tier == 0} == {3.0}
    assert {c.link.name for c in plan.clients if c.tier == 1} == {"up 50/down 200 Mbit/s"}
    assert plan_network(spec, clients=10, seed=4) == plan  # seeded


@pytest.mark.skipif(os.geteuid() != 0, reason="the kernel backend (and SO_SNDBUFFORCE) needs root")
def test_kernel_backend_channels_get_a_send_buffer_as_deep_as_loopbacks():
    """Over a shaped veth TCP's send buffer stopped at a few hundred kB, so the key authority, pushing a key set
    to a client that reads it only when its round needs it, was held there and the run deadlocked."""
    plan = plan_network(NetworkSpec.model_validate({"clients": {"profile": "lte"}}), clients=1, seed=0)
    scope.activate(ShapingSetup(plan, pace=False, delays=True, namespaces={"client-9": "/nonexistent"}), "client-0")
    a, b = socket.socketpair()
    try:
        Channel(FramedSocket(a), "the aggregator", 1.0)
        assert a.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF) >= scope.KERNEL_SEND_BUFFER
        assert b.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF) < scope.KERNEL_SEND_BUFFER  # only shaped ends
    finally:
        scope.deactivate()
        a.close()
        b.close()
