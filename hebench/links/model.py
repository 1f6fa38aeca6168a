"""The transfer model: a round's wall time on given links, from what its parties sent on loopback.

For one round measured on loopback (wall ``W``), with each client's bytes on its access link (``u_i`` up,
``d_i`` down: its own and its offload engine's, carried with their segments' headers), the turns of its
conversation (``k_i``: runs of frames in one direction, each a one-way trip), its compute CPU ``c_i``, and
each server-side party's bytes (``R_p`` received, ``S_p`` sent)::

    upload   = max( max_i [(s_i - 1)·c_i + u_i·(1 + p_i) / U_i],  max_p R_p / D_server )
    download = max( max_i  d_i·(1 + p_i) / D_i,                   max_p S_p / U_server )
    latency  = max_i  k_i · (delay_i + delay_server + 2·delay_i·p_i·segments_i / k_i)
    round    = W + upload + download + latency

``s_i`` is the client's tier's compute slowdown, ``p_i`` its loss (resent segments and their round trips).
It is what the userspace shaper applies, without the overlap of one client's transfer with another's
compute: a model, checked against emulated runs (``hebench.bench.networks``), never presented as measured.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from hebench.links.plan import Link, NetworkPlan
from hebench.links.segments import HEADER, MSS, wire_bytes
from hebench.results.records import PartyRoundRecord, Record

IDLE = ("wait", "receive", "send", "keys")  # phases that wait on peers or links, not compute


@dataclass(frozen=True)
class ClientTraffic:
    client: int
    up_bytes: int
    down_bytes: int
    turns: int
    compute_cpu_s: float


@dataclass(frozen=True)
class ServerTraffic:
    party: str
    sent: int
    received: int
    turns: int


@dataclass(frozen=True)
class RoundTraffic:
    """One round as measured: the aggregator's wall time and what every party moved."""

    config: str
    round: int
    wall_s: float
    clients: tuple[ClientTraffic, ...]
    servers: tuple[ServerTraffic, ...]


@dataclass(frozen=True)
class ModelledRound:
    upload_s: float
    download_s: float
    latency_s: float

    @property
    def transfer_s(self) -> float:
        return self.upload_s + self.download_s + self.latency_s


def _ledger(rec: Any) -> Mapping[str, Any]:
    return getattr(rec, "network", None) or {}


def round_traffic(records: Iterable[Record], config: str) -> list[RoundTraffic]:
    """Each completed round of ``config`` from its party records' link ledgers (shaped or recorded runs)."""
    clients: dict[int, dict[int, list[PartyRoundRecord]]] = defaultdict(lambda: defaultdict(list))
    servers: dict[int, list[PartyRoundRecord]] = defaultdict(list)
    walls: dict[int, float] = {}
    for rec in records:
        if not isinstance(rec, PartyRoundRecord) or rec.config != config:
            continue
        if rec.role == "client" and rec.client is not None:
            clients[rec.round][rec.client].append(rec)
        else:
            servers[rec.round].append(rec)
            if rec.role == "aggregator" and rec.round_wall_s is not None:  # on loopback (a report swaps in models)
                walls[rec.round] = float(rec.extra.get("loopback_round_wall_s", rec.round_wall_s))
    out = []
    for r in sorted(walls):
        per_client = []
        for i, recs in sorted(clients[r].items()):
            up = down = turns = 0
            cpu = 0.0
            for rec in recs:
                ledgers = [_ledger(rec), _ledger(rec.engine) if rec.engine is not None else {}]
                up += sum(int(led.get("up_bytes", 0)) for led in ledgers)
                down += sum(int(led.get("down_bytes", 0)) for led in ledgers)
                turns = max(turns, *(int(led.get("turns", 0)) for led in ledgers))
                cpu += rec.phases.cpu_s(exclude=IDLE)
            per_client.append(ClientTraffic(i, up, down, turns, cpu))
        per_server = tuple(
            ServerTraffic(
                rec.role,
                int(_ledger(rec).get("up_bytes", 0)),
                int(_ledger(rec).get("down_bytes", 0)),
                int(_ledger(rec).get("turns", 0)),
            )
            for rec in servers[r]
        )
        out.append(RoundTraffic(config, r, walls[r], tuple(per_client), per_server))
    return out


def _time(payload: int, rate: float | None, loss: float = 0.0) -> float:
    """Seconds ``payload`` bytes occupy a link of ``rate`` (segment headers and expected resends included)."""
    return 0.0 if rate is None else (wire_bytes(payload) + payload / MSS * loss * (MSS + HEADER)) / rate


def model_round(traffic: RoundTraffic, plan: NetworkPlan) -> ModelledRound:
    """The round's added transfer time on ``plan``'s links (see the module's formula)."""
    server: Link = plan.server
    upload = max((_time(s.received, server.down_Bps) for s in traffic.servers), default=0.0)
    download = max((_time(s.sent, server.up_Bps) for s in traffic.servers), default=0.0)
    latency = 0.0
    for c in traffic.clients:
        party = plan.for_party(f"client-{c.client}")
        link = party.link
        upload = max(upload, (party.compute_slowdown - 1) * c.compute_cpu_s + _time(c.up_bytes, link.up_Bps, link.loss))
        download = max(download, _time(c.down_bytes, link.down_Bps, link.loss))
        lost = (math.ceil(c.up_bytes / MSS) + math.ceil(c.down_bytes / MSS)) * link.loss
        latency = max(latency, c.turns * (link.delay_s + server.delay_s) + lost * 2 * link.delay_s)
    return ModelledRound(upload, download, latency)


def modelled_wall(traffic: RoundTraffic, plan: NetworkPlan) -> float:
    """The round's wall time on ``plan``'s links: measured on loopback plus the modelled transfers."""
    return traffic.wall_s + model_round(traffic, plan).transfer_s
