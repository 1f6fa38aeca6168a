"""Each configuration as the cost-vs-leakage chart and "what to choose" see it: costs ×raw and leakage, with evidence.

Costs are ratios of means to the run's raw row, the same figures the tables show, with the
per-steady-round values behind them (each round's mean over clients divided by raw's mean):
their min–max is drawn, and Welch's interval on them decides differences. Leakage is the best
attack's SSIM against the configuration's view (mean, bars ± std bounded by the observed
min and max) and the images it recovered (k of n, Wilson interval), which decides differences.
Rows marked ``modelled`` (not measured) are carried as such.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from hebench.analysis.pareto import Interval
from hebench.analysis.summary import SummaryRow
from hebench.analysis.text_leakage import TextVerdict
from hebench.analysis.text_threats import text_leakage_under
from hebench.protections import KeyHolders, find_mode
from hebench.results.records import AttackSummaryRecord, ModelledCostRecord

# measure -> (axis label, the SummaryRow ratio it shows, the SummaryRow mean and per-round values it comes from)
COSTS: dict[str, tuple[str, str, str, str]] = {
    "cpu": ("host CPU ×raw", "cpu_overhead_vs_raw", "client_cpu_s_per_round", "client_cpu_s_rounds"),
    "total_cpu": (
        "total CPU ×raw (host + engine)",
        "total_cpu_overhead_vs_raw",
        "total_cpu_s_per_round",
        "total_cpu_s_rounds",
    ),
    "bytes": (
        "upload bytes ×raw",
        "bytes_overhead_vs_raw",
        "upload_bytes_per_client_round",
        "upload_bytes_rounds",
    ),
    "time": ("round time ×raw", "round_time_vs_raw", "round_wall_s", "round_wall_s_rounds"),
}
LEAKAGE = "leakage"
DEFAULT_THREAT = "aggregator"  # the honest-but-curious aggregator (hebench.protections.threats)


@dataclass(frozen=True)
class Option:
    """One configuration of one run: what it costs, what it leaks, what accuracy it gives up."""

    config: str
    run: str = ""
    costs: Mapping[str, Interval | None] = field(default_factory=dict)  # keys of COSTS
    leakage: Interval | None = None  # best attack's SSIM: mean, bounded ± std; None: not attacked
    recovered: Interval | None = None  # images that attack recovered: k of n (Wilson); None: not recorded
    attack: str | None = None  # the plan that gave the leakage
    attack_name: str | None = None  # the attack that ran (dlg, idlg, ...)
    accuracy_loss: float | None = None  # raw's final accuracy minus this one's
    modelled: bool = False
    baseline: bool = False  # the run's raw row: every ratio is taken against it
    kind: str = "other"  # what the chart's marker shape tells apart (see kind_of): a mode's name or a modifier
    engines: bool = False  # offload: an engine does the HE, so total CPU differs from host CPU
    contended: bool | None = False  # its run's wall times include waiting for a core (load flags); None: unknown
    cold: bool = False  # no steady round yet: its costs average rounds that include the first (warm-up) one
    leakage_kind: str = "ssim"  # ssim (images: the best attack's SSIM) or text (sequences recovered exactly)
    rouge1: float | None = None  # text: ROUGE-1 of the view that gave the leakage

    @property
    def name(self) -> str:
        return f"{self.run}: {self.config}" if self.run else self.config

    @property
    def measures(self) -> dict[str, Interval | None]:
        """What the Pareto set ranks on: the costs, and leakage as the images recovered."""
        return {**self.costs, LEAKAGE: self.recovered}


def kind_of(row: SummaryRow) -> str:
    """What the chart's marker tells apart: dp, tls, selective, compact (host-he with compact params), the row's
    mode (its spec's ``chart_marker``) or other (a mode this hebench does not know)."""
    spec = find_mode(row.mode)
    if row.dp:
        return "dp"
    if row.transport == "tls":
        return "tls"
    if row.selective and (spec is None or not spec.needs_engines):  # offload keeps its marker, selective or not
        return "selective"
    if spec is None:
        return "other"
    if spec.key_holders is KeyHolders.CLIENTS and (row.params or {}).get("bits"):
        return "compact"
    return spec.name


def cost_interval(row: SummaryRow, raw: SummaryRow | None, cost: str) -> Interval | None:
    """The ratio of means to raw (as the tables) with each steady round's mean divided by raw's mean."""
    _, ratio_key, mean_key, rounds_key = COSTS[cost]
    ratio = getattr(row, ratio_key)
    if ratio is None:
        return None
    base = getattr(raw, mean_key) if raw is not None else None
    per_round = getattr(row, rounds_key) or ()
    if not base or not per_round:
        return Interval(ratio, ratio, ratio, sd=0.0, n=1)  # one figure: shown, never decisive
    return Interval.of([v / base for v in per_round], value=ratio)


def best_attack(
    config: str, configs: Sequence[str], attacks: Sequence[AttackSummaryRecord], threat: str = DEFAULT_THREAT
) -> AttackSummaryRecord | None:
    """The attack with the highest mean SSIM against ``config``'s view, under one threat model (default: the
    honest-but-curious aggregator; attack records written before threat models are that).

    An attack belongs to a configuration by its ``config`` field where it has one, else by
    its plan name (the configuration's label, optionally followed by ``/attacker...``), the
    longest matching label winning.
    """
    attacks = [a for a in attacks if a.threat_key == threat]

    def owner(a: AttackSummaryRecord) -> str | None:
        named = getattr(a, "config", None)
        if named:
            return named
        matches = [c for c in configs if a.plan == c or a.plan.startswith(c + "/")]
        return max(matches, key=len) if matches else None

    mine = [a for a in attacks if not a.dry_run and "ssim" in a.scores and owner(a) == config]
    return max(mine, key=lambda a: a.scores["ssim"]["mean"], default=None)


def ssim_interval(scores: Mapping[str, float], n: int = 0) -> Interval:
    """Mean SSIM over ``n`` images and seeds with its std; shown as ± std bounded by the lowest and highest SSIM
    observed (so never outside the range SSIM took)."""
    mean, std = scores["mean"], scores.get("std", 0.0)
    lo, hi = max(mean - std, scores.get("min", mean - std)), min(mean + std, scores.get("max", mean + std))
    return Interval(mean, min(lo, mean), max(hi, mean), sd=std, n=n, unit="images")


def recovered_interval(attack: AttackSummaryRecord) -> Interval | None:
    """Images recovered (SSIM at or above the success threshold) of those attacked, with the Wilson interval."""
    success = attack.scores.get("success")
    if not success or not success.get("n"):
        return None
    return Interval.rate(int(success["k"]), int(success["n"]))


def _model_factor(model: ModelledCostRecord, cost: str) -> float:
    """How much the model scales a measured cost: CPU and round time by its factors; bytes not at all."""
    if cost in ("cpu", "total_cpu") and model.baseline_cpu_s > 0:
        return model.modelled_cpu_s / model.baseline_cpu_s
    if cost == "time" and model.baseline_round_wall_s > 0:
        return model.modelled_round_wall_s / model.baseline_round_wall_s
    return 1.0


def options_for(
    rows: Sequence[SummaryRow],
    attacks: Sequence[AttackSummaryRecord] = (),
    run: str = "",
    modelled: Mapping[str, ModelledCostRecord] | None = None,
    contended: bool | None = False,
    threat: str = DEFAULT_THREAT,
    text: Sequence[TextVerdict] = (),
) -> list[Option]:
    """One option per row (raw included, marked the baseline), costs ×raw with their per-round evidence.

    A language model's row with no image attack takes its leakage from ``text`` (:func:`text_leakage_under`: the
    exact-sequence rate of its most revealing view under ``threat``, Wilson 95 %; the aggregator's own view or its
    one share by default, a colluding client's, all share holders' or a lying aggregator's under theirs).

    A row with a ``modelled`` cost record (a TEE row) takes its measured costs scaled by the model's
    factors (CPU and round time; bytes unchanged) and is marked modelled. ``contended``: the run's wall
    times include waiting for a core. ``threat``: whose attacks score the leakage (a threat key).
    """
    raw = next((r for r in rows if r.is_baseline), None)
    labels = [r.config for r in rows]
    out = []
    for row in rows:
        costs = {cost: cost_interval(row, raw, cost) for cost in COSTS}
        model = (modelled or {}).get(row.config)
        if model is not None:
            costs = {c: None if v is None else v.scaled(_model_factor(model, c)) for c, v in costs.items()}
        attack = best_attack(row.config, labels, attacks, threat)
        loss = None
        if raw is not None and raw.accuracy is not None and row.accuracy is not None:
            loss = raw.accuracy - row.accuracy
        said = text_leakage_under(row, text, threat) if attack is None else None
        if attack is not None:
            leak: dict = {
                "leakage": ssim_interval(attack.scores["ssim"], int(attack.scores.get("n") or 0)),
                "recovered": recovered_interval(attack),
                "attack": attack.plan,
                "attack_name": attack.attack,
            }
        elif said is not None:
            leak = {
                "leakage": said.exact,
                "recovered": said.exact,
                "attack": f"{said.config} · {said.view} · b={said.batch_size}",
                "attack_name": said.attack,
                "leakage_kind": "text",
                "rouge1": said.rouge1,
            }
        else:
            leak = {}
        out.append(
            Option(
                config=row.config,
                run=run,
                costs=costs,
                **leak,
                accuracy_loss=loss,
                modelled=model is not None,
                baseline=row.is_baseline,
                kind=kind_of(row),
                engines=row.uses_engines,
                contended=contended,
                cold=row.includes_warmup,
            )
        )
    return out
