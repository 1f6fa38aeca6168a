"""Which link each party of a configuration is on: the suite's ``network`` resolved per party name.

Server-side parties (the aggregator, secret sharing's share holders, the key authority) each have a pipe of
the ``server`` link's rates, shared by all of that party's channels: the aggregator's downlink from N clients
is one pipe. Client ``i`` and its offload engine ``engine-i`` (the NIC in the client's device) are on client
``i``'s link; tiers assign clients to links by share, through a permutation seeded with the suite's seed.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np

from hebench.config import LinkSpec, NetworkSpec

MBIT = 1e6 / 8  # bytes per second in one Mbit/s


@dataclass(frozen=True)
class Link:
    """One access link, resolved: rates in bytes per second (None: not limited), times in seconds."""

    name: str
    up_Bps: float | None = None
    down_Bps: float | None = None
    delay_s: float = 0.0
    jitter_s: float = 0.0
    loss: float = 0.0

    @classmethod
    def from_spec(cls, spec: LinkSpec) -> Link:
        f = spec.figures()

        def rate(mbit: float | None) -> float | None:
            return None if mbit is None else mbit * MBIT

        return cls(
            name=spec.label,
            up_Bps=rate(f["uplink_mbit"]),
            down_Bps=rate(f["downlink_mbit"]),
            delay_s=(f["delay_ms"] or 0.0) / 1000,
            jitter_s=(f["jitter_ms"] or 0.0) / 1000,
            loss=f["loss"] or 0.0,
        )

    def to_json(self) -> dict[str, Any]:
        """Rates back in Mbit/s, times in ms (as the suite writes them)."""
        return {
            "name": self.name,
            "uplink_mbit": None if self.up_Bps is None else self.up_Bps / MBIT,
            "downlink_mbit": None if self.down_Bps is None else self.down_Bps / MBIT,
            "delay_ms": self.delay_s * 1000,
            "jitter_ms": self.jitter_s * 1000,
            "loss": self.loss,
        }


@dataclass(frozen=True)
class PartyLink:
    """A party's link and, for a client of a tier, its tier and compute slowdown."""

    party: str
    side: Literal["client", "server"]
    link: Link
    tier: int | None = None
    compute_slowdown: float = 1.0


@dataclass(frozen=True)
class NetworkPlan:
    """Every party's link in one configuration's run."""

    emulation: str
    label: str
    server: Link
    clients: tuple[PartyLink, ...]
    seed: int = 0

    def for_party(self, party: str) -> PartyLink:
        """``client-3`` and ``engine-3`` share client 3's link (the engine computes at this machine's speed: its
        tier's slowdown is the client device's); anything else is server-side."""
        role, _, index = party.rpartition("-")
        if role in ("client", "engine") and index.isdigit():
            client = self.clients[int(index)]
            slowdown = client.compute_slowdown if role == "client" else 1.0
            return PartyLink(party, "client", client.link, client.tier, slowdown)
        return PartyLink(party, "server", self.server)

    def to_json(self) -> dict[str, Any]:
        """The configuration record's ``network``: the backend, the server's link, each tier and its clients."""
        tiers: dict[str, dict[str, Any]] = {}
        for c in self.clients:
            key = str(c.tier if c.tier is not None else 0)
            entry = tiers.setdefault(
                key, {"link": c.link.to_json(), "compute_slowdown": c.compute_slowdown, "clients": []}
            )
            entry["clients"].append(int(c.party.rpartition("-")[2]))
        return {
            "label": self.label,
            "emulation": self.emulation,
            "server": self.server.to_json(),
            "tiers": [tiers[k] for k in sorted(tiers, key=int)],
        }


def tier_assignment(shares: tuple[float, ...], clients: int, seed: int) -> list[int]:
    """Client index -> tier: counts by largest remainder of ``share × clients``, clients drawn by a seeded
    permutation (so the evaluating client 0 is not always in the first tier)."""
    exact = [s * clients for s in shares]
    counts = [int(x) for x in exact]
    for k in sorted(range(len(shares)), key=lambda k: exact[k] - counts[k], reverse=True)[: clients - sum(counts)]:
        counts[k] += 1
    order = np.random.default_rng([seed, 27]).permutation(clients)
    tiers = [0] * clients
    start = 0
    for k, n in enumerate(counts):
        for i in order[start : start + n]:
            tiers[int(i)] = k
        start += n
    return tiers


def plan_network(spec: NetworkSpec, clients: int, seed: int) -> NetworkPlan:
    """The links of a run with ``clients`` clients (keys ``spec`` leaves out take their defaults)."""
    spec = spec.resolved()
    assert spec.clients is not None and spec.server is not None and spec.tiers is not None
    if not spec.tiers:
        link = Link.from_spec(spec.clients)
        parties = tuple(PartyLink(f"client-{i}", "client", link) for i in range(clients))
    else:
        links = [Link.from_spec(t.link_spec(spec.clients)) for t in spec.tiers]
        assigned = tier_assignment(tuple(t.share for t in spec.tiers), clients, seed)
        parties = tuple(
            PartyLink(f"client-{i}", "client", links[k], k, spec.tiers[k].compute_slowdown)
            for i, k in enumerate(assigned)
        )
    return NetworkPlan(str(spec.emulation), spec.label, Link.from_spec(spec.server), parties, seed)


def link_from_json(data: dict[str, Any]) -> Link:
    """A link as :meth:`Link.to_json` wrote it."""

    def rate(mbit: Any) -> float | None:
        return None if mbit is None else float(mbit) * MBIT

    return Link(
        name=str(data.get("name", "custom")),
        up_Bps=rate(data.get("uplink_mbit")),
        down_Bps=rate(data.get("downlink_mbit")),
        delay_s=float(data.get("delay_ms") or 0.0) / 1000,
        jitter_s=float(data.get("jitter_ms") or 0.0) / 1000,
        loss=float(data.get("loss") or 0.0),
    )


def plan_from_json(data: dict[str, Any]) -> NetworkPlan:
    """A plan as :meth:`NetworkPlan.to_json` wrote it (a configuration record's ``network``)."""
    clients: dict[int, PartyLink] = {}
    for k, tier in enumerate(data.get("tiers") or ()):
        link = link_from_json(tier["link"])
        several = len(data["tiers"]) > 1
        for i in tier["clients"]:
            clients[int(i)] = PartyLink(
                f"client-{i}", "client", link, k if several else None, float(tier.get("compute_slowdown", 1.0))
            )
    ordered = tuple(clients[i] for i in sorted(clients))
    emulation, label = str(data.get("emulation", "userspace")), str(data.get("label", ""))
    return NetworkPlan(emulation, label, link_from_json(data["server"]), ordered)


def with_client_link(plan: NetworkPlan, link: Link) -> NetworkPlan:
    """The same plan with every client on ``link`` (a sweep over uplink rates)."""
    clients = tuple(replace(c, link=link) for c in plan.clients)
    return replace(plan, clients=clients, label=link.name)
