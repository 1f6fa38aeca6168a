"""A run's configurations on their links, one row each: what the per-link table and the report show.

Round walls are the aggregator's over steady rounds: measured (``userspace``, ``kernel``; they include the
transfers) or modelled (``model``: loopback plus the modelled transfers, marked as such). A client's time
transferring is what its link ledger held it (its offload engine's included), beside its compute CPU time.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from hebench.protections import find_mode
from hebench.results.records import (
    ConfigurationRecord,
    ModelledRoundRecord,
    PartyRoundRecord,
    Record,
    TimeToAccuracyRecord,
)

IDLE = ("wait", "receive", "send", "keys")


@dataclass(frozen=True)
class LinkRow:
    config: str
    protection: str  # the label without its link (``host-he/tenseal-ckks@lte`` -> ``host-he/tenseal-ckks``)
    link: str
    emulation: str
    uplink_mbit: float | None
    round_wall_s: float | None  # steady mean
    modelled: bool  # round walls from the transfer model (emulation: model), not measured
    steady_rounds: int
    client_transfer_s: float | None  # per training client and round: held by its link
    client_compute_cpu_s: float | None  # per training client and round: CPU of its compute phases
    time_to_accuracy: TimeToAccuracyRecord | None = None
    missing: tuple[str, ...] = ()  # what the kernel lacked (applied in userspace instead)
    baseline: bool = False  # the baseline mode's plain configuration: the links section's ratios are taken to it


def _mean(values: Iterable[float]) -> float | None:
    values = list(values)
    return statistics.fmean(values) if values else None


def _ledger(rec: Any) -> Mapping[str, Any]:
    return getattr(rec, "network", None) or {}


def link_rows(records: Iterable[Record]) -> list[LinkRow]:
    """One row per configuration that ran on links (none: the run was on loopback)."""
    records = list(records)
    configs = {r.config: r for r in records if isinstance(r, ConfigurationRecord) and r.network}
    if not configs:
        return []
    walls: dict[str, dict[int, float]] = defaultdict(dict)
    modelled: dict[str, dict[int, float]] = defaultdict(dict)
    clients: dict[str, list[PartyRoundRecord]] = defaultdict(list)
    reached: dict[str, TimeToAccuracyRecord] = {}
    for rec in records:
        if isinstance(rec, PartyRoundRecord) and rec.config in configs:
            if rec.role == "aggregator" and rec.round_wall_s is not None:
                walls[rec.config][rec.round] = rec.round_wall_s
            elif rec.role == "client" and rec.trained:
                clients[rec.config].append(rec)
        elif isinstance(rec, ModelledRoundRecord):
            modelled[rec.config][rec.round] = rec.round_wall_s
        elif isinstance(rec, TimeToAccuracyRecord):
            reached[rec.config] = rec
    rows = []
    for label, config in configs.items():
        net = config.network or {}
        is_model = net.get("emulation") == "model"
        by_round = modelled[label] if is_model else walls[label]
        steady = {r: w for r, w in by_round.items() if r >= 1} or by_round
        cold = min(by_round, default=0)
        steady_clients = [c for c in clients[label] if c.round != cold] or clients[label]
        tiers = net.get("tiers") or [{}]
        rows.append(
            LinkRow(
                config=label,
                protection=label.split("@", 1)[0],
                link=str(net.get("label", "")),
                emulation=str(net.get("emulation", "")),
                uplink_mbit=(tiers[0].get("link") or {}).get("uplink_mbit") if len(tiers) == 1 else None,
                round_wall_s=_mean(steady.values()),
                modelled=is_model,
                steady_rounds=len(steady),
                client_transfer_s=None if is_model else _mean(_transfer(c) for c in steady_clients if _held(c)),
                client_compute_cpu_s=_mean(c.phases.cpu_s(exclude=IDLE) for c in steady_clients),
                time_to_accuracy=reached.get(label),
                missing=tuple((net.get("applied") or {}).get("missing") or ()),
                baseline=_is_baseline(config),
            )
        )
    return rows


def _is_baseline(config: ConfigurationRecord) -> bool:
    """The baseline mode's plain configuration: its label (without the link) is the mode's name alone (no name of
    its own, no DP, TLS or TEE suffix)."""
    spec = find_mode(config.mode)
    return spec is not None and spec.baseline and config.config.split("@", 1)[0] == spec.name


def _held(rec: PartyRoundRecord) -> bool:
    """True when the client (or its engine) kept a link ledger: Flower's clients on kernel links keep none, and
    their time on the link shows in the round walls only."""
    return bool(_ledger(rec)) or (rec.engine is not None and bool(_ledger(rec.engine)))


def _transfer(rec: PartyRoundRecord) -> float:
    engine = _ledger(rec.engine) if rec.engine is not None else {}
    return float(_ledger(rec).get("transfer_s", 0.0)) + float(engine.get("transfer_s", 0.0))
