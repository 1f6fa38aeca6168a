"""What a configuration's links come to, from its records: modelled round times and time-to-accuracy."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from hebench.links.model import model_round, round_traffic
from hebench.links.plan import NetworkPlan
from hebench.results.records import ModelledRoundRecord, PartyRoundRecord, Record, RoundRecord, TimeToAccuracyRecord


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
