"""What a configuration's links come to, from its records: modelled round times and time-to-accuracy."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence

from hebench.links.model import model_round, round_traffic
from hebench.links.plan import NetworkPlan
from hebench.results.records import (
    ConfigurationRecord,
    ModelledRoundRecord,
    PartyRoundRecord,
    Record,
    RoundRecord,
    TimeToAccuracyRecord,
)


def modelled_rounds(records: Sequence[Record], config: str, plan: NetworkPlan) -> list[ModelledRoundRecord]:
    """A ``modelled_round`` for each of ``config``'s rounds that has none yet (``emulation: model``)."""
    done = {r.round for r in records if isinstance(r, ModelledRoundRecord) and r.config == config}
    out = []
    for traffic in round_traffic(records, config):
        if traffic.round in done:
            continue
        modelled = model_round(traffic, plan)
        out.append(
            ModelledRoundRecord(
                config=config,
                round=traffic.round,
                link=plan.label,
                loopback_round_wall_s=traffic.wall_s,
                round_wall_s=traffic.wall_s + modelled.transfer_s,
                transfer_s=modelled.transfer_s,
                upload_s=modelled.upload_s,
                download_s=modelled.download_s,
                latency_s=modelled.latency_s,
            )
        )
    return out


def round_walls(records: Iterable[Record], config: str, modelled: bool) -> dict[int, float]:
    """Round -> wall time: the aggregator's (measured), or the modelled one (``modelled``)."""
    walls: dict[int, float] = {}
    for rec in records:
        if getattr(rec, "config", None) != config:
            continue
        if modelled and isinstance(rec, ModelledRoundRecord):
            walls[rec.round] = rec.round_wall_s
        elif not modelled and isinstance(rec, PartyRoundRecord) and rec.role == "aggregator" and rec.round_wall_s:
            walls[rec.round] = rec.round_wall_s
    return walls


def time_to_accuracy(
    records: Sequence[Record], config: str, target: float, link: str | None, modelled: bool
) -> TimeToAccuracyRecord | None:
    """The first round of ``config`` whose accuracy reached ``target`` and the round walls up to it (None: not
    reached, or a round's wall is missing)."""
    accuracy = {r.round: r.accuracy for r in records if isinstance(r, RoundRecord) and r.config == config}
    walls = round_walls(records, config, modelled)
    total = 0.0
    for r in sorted(accuracy):
        if r not in walls:
            return None
        total += walls[r]
        reached = accuracy[r]
        if reached is not None and reached >= target:
            return TimeToAccuracyRecord(
                config=config, target=target, round=r, accuracy=reached, wall_s=total, link=link, modelled=modelled
            )
    return None


def on_their_links(records: Sequence[Record]) -> tuple[list[Record], list[str]]:
    """The records with each ``emulation: model`` configuration's aggregator round walls replaced by the modelled
    ones (the loopback wall kept as ``loopback_round_wall_s``), so that round-time figures are on the suite's link;
    and a note per configuration saying its round walls are modelled, not measured."""
    model = {
        r.config: str((r.network or {}).get("label", ""))
        for r in records
        if isinstance(r, ConfigurationRecord) and (r.network or {}).get("emulation") == "model"
    }
    if not model:
        return list(records), []
    walls = {(r.config, r.round): r.round_wall_s for r in records if isinstance(r, ModelledRoundRecord)}
    out: list[Record] = []
    for rec in records:
        key = (getattr(rec, "config", None), getattr(rec, "round", None))
        if isinstance(rec, PartyRoundRecord) and rec.role == "aggregator" and key in walls and rec.round_wall_s:
            extra = {**rec.extra, "loopback_round_wall_s": rec.round_wall_s}
            rec = dataclasses.replace(rec, round_wall_s=walls[key], extra=extra)
        out.append(rec)
    notes = [
        f"'{config}': round walls are modelled on {link} (emulation: model: the round measured on loopback plus "
        "the modelled transfers), not measured"
        for config, link in model.items()
    ]
    return out, notes
