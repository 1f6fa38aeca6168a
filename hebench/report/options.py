"""Each configuration as the cost-vs-leakage chart and "what to choose" see it: costs ×raw and leakage, with spreads.

Costs are ratios to the run's raw row, one per steady round (every round but the
first, a warm-up, when there are two or more), so each has an interval. Leakage is
the best attack's SSIM against the configuration's view, mean ± std over images
and seeds. Rows marked ``modelled`` (not measured) are carried as such.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from hebench.report.pareto import Interval
from hebench.results.records import (
    AttackSummaryRecord,
    ConfigurationRecord,
    ModelledCostRecord,
    PartyRoundRecord,
    Record,
    RoundRecord,
)
from hebench.results.summary import SummaryRow, summarize_run

# measure -> (axis label, the SummaryRow field it comes from)
COSTS: dict[str, tuple[str, str]] = {
    "cpu": ("host CPU ×raw", "cpu_overhead_vs_raw"),
    "bytes": ("upload bytes ×raw", "bytes_overhead_vs_raw"),
    "time": ("round time ×raw", "round_time_vs_raw"),
}
LEAKAGE = "leakage"
SSIM_TIE = 0.025  # leakage means closer than twice this are a tie (paired attacks on the same images)


@dataclass(frozen=True)
class Option:
    """One configuration of one run: what it costs, what it leaks, what accuracy it gives up."""

    config: str
    run: str = ""
    costs: Mapping[str, Interval | None] = field(default_factory=dict)  # keys of COSTS
    leakage: Interval | None = None  # best attack's SSIM (mean, mean ± std); None: not attacked
    attack: str | None = None  # the plan that gave the leakage
    accuracy_loss: float | None = None  # raw's final accuracy minus this one's
    modelled: bool = False
    baseline: bool = False  # the run's raw row: every ratio is taken against it

    @property
    def name(self) -> str:
        return f"{self.run}: {self.config}" if self.run else self.config

    @property
    def measures(self) -> dict[str, Interval | None]:
        """What the Pareto set ranks on. Leakage is compared paired: every configuration is attacked on the
        same images and seeds, so the std over images (image-to-image variation, the chart's error bars) is
        not noise between configurations; means within ``SSIM_TIE`` are a tie."""
        leak = self.leakage
        paired = None if leak is None else Interval(leak.value, leak.value - SSIM_TIE, leak.value + SSIM_TIE)
        return {**self.costs, LEAKAGE: paired}


def steady_round_ratios(records: Iterable[Record]) -> dict[str, dict[str, Interval]]:
    """Config → cost → the ratios to raw of each steady round, as an interval (mean, min, max)."""
    records = list(records)
    configs = [r for r in records if isinstance(r, ConfigurationRecord)]
    rounds = sorted({r.round for r in records if isinstance(r, PartyRoundRecord)})
    steady = rounds[1:] if len(rounds) > 1 else rounds
    values: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for k in steady:
        subset = [r for r in records if isinstance(r, (PartyRoundRecord, RoundRecord)) and r.round == k]
        for row in summarize_run([*configs, *subset]):
            for cost, (_, key) in COSTS.items():
                value = getattr(row, key)
                if value is not None:
                    values[row.config][cost].append(value)
    return {c: {cost: Interval.of(v) for cost, v in by.items()} for c, by in values.items()}


def best_attack(
    config: str, configs: Sequence[str], attacks: Sequence[AttackSummaryRecord]
) -> AttackSummaryRecord | None:
    """The attack with the highest mean SSIM against ``config``'s view.

    An attack belongs to a configuration by its ``config`` field where it has one, else by
    its plan name (the configuration's label, optionally followed by ``/attacker...``), the
    longest matching label winning.
    """

    def owner(a: AttackSummaryRecord) -> str | None:
        named = getattr(a, "config", None)
        if named:
            return named
        matches = [c for c in configs if a.plan == c or a.plan.startswith(c + "/")]
        return max(matches, key=len) if matches else None

    mine = [a for a in attacks if not a.dry_run and "ssim" in a.scores and owner(a) == config]
    return max(mine, key=lambda a: a.scores["ssim"]["mean"], default=None)


def _model_factor(model: ModelledCostRecord, cost: str) -> float:
    """How much the model scales a measured cost: CPU and round time by its factors; bytes not at all."""
    if cost == "cpu" and model.baseline_cpu_s > 0:
        return model.modelled_cpu_s / model.baseline_cpu_s
    if cost == "time" and model.baseline_round_wall_s > 0:
        return model.modelled_round_wall_s / model.baseline_round_wall_s
    return 1.0


def _scaled(value: Interval | None, factor: float) -> Interval | None:
    return (
        None if value is None else Interval(value.value * factor, value.lo * factor, value.hi * factor, value.unstable)
    )


def options_for(
    rows: Sequence[SummaryRow],
    attacks: Sequence[AttackSummaryRecord] = (),
    spreads: Mapping[str, Mapping[str, Interval]] | None = None,
    run: str = "",
    modelled: Mapping[str, ModelledCostRecord] | None = None,
) -> list[Option]:
    """One option per non-baseline row (and the raw row itself); costs from ``spreads`` where given.

    A row with a ``modelled`` cost record (a TEE row) takes its measured costs scaled by the model's
    factors (CPU and round time; bytes unchanged) and is marked modelled.
    """
    raw = next((r for r in rows if r.is_baseline), None)
    labels = [r.config for r in rows]
    out = []
    for row in rows:
        measured = (spreads or {}).get(row.config, {})
        costs: dict[str, Interval | None] = {}
        for cost, (_, key) in COSTS.items():
            point = getattr(row, key)
            costs[cost] = measured.get(cost) or (Interval.exact(point) if point is not None else None)
        model = (modelled or {}).get(row.config)
        if model is not None:
            costs = {cost: _scaled(value, _model_factor(model, cost)) for cost, value in costs.items()}
        attack = best_attack(row.config, labels, attacks)
        ssim = attack.scores["ssim"] if attack else None
        leak = Interval(ssim["mean"], ssim["mean"] - ssim["std"], ssim["mean"] + ssim["std"]) if ssim else None
        loss = None
        if raw is not None and raw.accuracy is not None and row.accuracy is not None:
            loss = raw.accuracy - row.accuracy
        out.append(
            Option(
                config=row.config,
                run=run,
                costs=costs,
                leakage=leak,
                attack=attack.plan if attack else None,
                accuracy_loss=loss,
                modelled=model is not None,
                baseline=row.is_baseline,
            )
        )
    return out
