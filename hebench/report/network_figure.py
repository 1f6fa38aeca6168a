"""The report's links section: round time against uplink rate per protection, a per-link table, and what to
choose on each link.

Emulated points (``userspace``, ``kernel``) are the steady rounds' mean measured wall; each sits beside the
model's prediction for the same link (hollow), and the model's line sweeps the uplink rate from one run of the
protection (its ``model`` run where there is one: loopback plus modelled transfers). Rows of an ``emulation:
model`` configuration are modelled and drawn as such, never as measurements.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from hebench.analysis.links import choose_per_link, short_protection, time_to_accuracy_text
from hebench.links.model import model_round, round_traffic
from hebench.links.plan import NetworkPlan, link_from_json, plan_from_json, with_client_link
from hebench.links.rows import LinkRow, link_rows
from hebench.report.load import Source
from hebench.report.log_ticks import log_axis
from hebench.results import units as U
from hebench.results.records import ConfigurationRecord, Record

HEADER = [
    "configuration",
    "link",
    "emulation",
    "uplink Mbit/s",
    "round wall s",
    "client transfer s",
    "client compute CPU s",
    "time to accuracy",
]


@dataclass(frozen=True)
class Curve:
    """One protection's model line: round time at each uplink rate, from the run named in ``basis``."""

    protection: str
    rates_mbit: tuple[float, ...]
    round_s: tuple[float, ...]
    basis: str
    source: Source
    config: str  # the basis configuration


def _plan(records: Sequence[Record], config: str) -> NetworkPlan | None:
    for rec in records:
        if isinstance(rec, ConfigurationRecord) and rec.config == config and rec.network:
            return plan_from_json(dict(rec.network))
    return None


def _steady(values: dict[int, float]) -> float | None:
    steady = [v for r, v in values.items() if r >= 1] or list(values.values())
    return sum(steady) / len(steady) if steady else None


def predicted(records: Sequence[Record], config: str, plan: NetworkPlan) -> float | None:
    """The model's steady round time for ``config``'s rounds on ``plan`` (from its loopback-equivalent walls:
    a model run's loopback walls, or an emulated run's walls less their own modelled transfers)."""
    own = _plan(records, config)
    if own is None:
        return None
    emulated = own.emulation != "model"
    rounds = {}
    for traffic in round_traffic(records, config):
        base = traffic.wall_s - (model_round(traffic, own).transfer_s if emulated else 0.0)
        rounds[traffic.round] = max(base, 0.0) + model_round(traffic, plan).transfer_s
    return _steady(rounds)


def model_curves(sources: Sequence[Source], rows: Sequence[tuple[Source, LinkRow]]) -> list[Curve]:
    """Per protection, the model's round time over uplink rates around those run, from its best basis: a
    ``model`` run, else its emulated run on the fastest uplink (whose compute is nearest loopback)."""
    by_protection: dict[str, list[tuple[Source, LinkRow]]] = {}
    for source, row in rows:
        by_protection.setdefault(row.protection, []).append((source, row))
    rates = [r.uplink_mbit for _, r in rows if r.uplink_mbit]
    if not rates:
        return []
    low, high = min(rates) / 3, max(rates) * 3
    sweep = tuple(low * (high / low) ** (k / 24) for k in range(25))
    curves = []
    for protection, entries in by_protection.items():
        entries = [e for e in entries if e[1].uplink_mbit]
        if not entries:
            continue
        source, row = min(entries, key=lambda e: (not e[1].modelled, -(e[1].uplink_mbit or 0.0)))
        plan = _plan(source.records, row.config)
        if plan is None or not plan.clients:
            continue
        base = plan.clients[0].link.to_json()
        values = []
        for rate in sweep:
            link = link_from_json({**base, "uplink_mbit": rate, "name": f"{rate:.3g} Mbit/s"})
            values.append(predicted(source.records, row.config, with_client_link(plan, link)))
        if all(v is not None for v in values):
            basis = f"{row.config} ({'model run' if row.modelled else row.emulation + ' run'} on {row.link})"
            points = tuple(v for v in values if v is not None)
            curves.append(Curve(protection, sweep, points, basis, source, row.config))
    return curves


def round_time_figure(rows: Sequence[tuple[Source, LinkRow]], curves: Sequence[Curve]) -> Callable[[Figure], None]:
    """Round time against uplink rate, log-log: the model's lines, emulated points (filled), the model's
    prediction at each emulated link from its line's basis when that is another run (hollow), modelled rows
    (crosses)."""
    basis = {c.protection: c for c in curves}

    def draw(fig: Figure) -> None:
        ax = fig.add_subplot()
        drawn = {"emulated": False, "hollow": False, "modelled": False}  # the legend explains only what is drawn
        walls: list[float] = [w for c in curves for w in c.round_s]
        protections = list(dict.fromkeys([*(c.protection for c in curves), *(r.protection for _, r in rows)]))
        colors = {p: f"C{k % 10}" for k, p in enumerate(protections)}
        for curve in curves:
            ax.plot(curve.rates_mbit, curve.round_s, color=colors[curve.protection], lw=1.2, alpha=0.8)
        for source, row in rows:
            if not row.uplink_mbit or not row.round_wall_s:
                continue
            color = colors[row.protection]
            walls.append(row.round_wall_s)
            if row.modelled:
                ax.plot(row.uplink_mbit, row.round_wall_s, "x", color=color, ms=7)
                drawn["modelled"] = True
                continue
            ax.plot(row.uplink_mbit, row.round_wall_s, "o", color=color, ms=6)
            drawn["emulated"] = True
            curve = basis.get(row.protection)
            plan = _plan(source.records, row.config)
            if curve is None or plan is None or (curve.source is source and curve.config == row.config):
                continue  # the line was drawn through this very run: no independent prediction to show
            model = predicted(curve.source.records, curve.config, plan)
            if model:
                ax.plot(row.uplink_mbit, model, "o", mfc="none", color=color, ms=10)
                walls.append(model)
                drawn["hollow"] = True
        for p in protections:
            ax.plot([], [], "-", color=colors[p], label=short_protection(p))
        if drawn["emulated"]:
            ax.plot([], [], "o", color="grey", label="emulated (measured)")
        if drawn["hollow"]:
            ax.plot([], [], "o", mfc="none", color="grey", ms=10, label="model, same link")
        if drawn["modelled"]:
            ax.plot([], [], "x", color="grey", label="modelled run")
        rates = [r for c in curves for r in c.rates_mbit] + [r.uplink_mbit for _, r in rows if r.uplink_mbit]
        if rates:
            log_axis(ax, "x", min(rates) / 1.2, max(rates) * 1.2)
        if walls := [w for w in walls if w > 0]:
            log_axis(ax, "y", min(walls) / 1.3, max(walls) * 1.3)
        ax.set_xlabel("client uplink (Mbit/s, log)")
        ax.set_ylabel("round wall time (s, log)")
        ax.grid(True, which="both", alpha=0.2)
        ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)

    return draw


def links_section(sources: Sequence[Source], figs: Any, files: Path, write_csv: Callable[..., Path]) -> dict | None:
    """The report's links section (None: no configuration ran on links)."""
    rows = [(s, row) for s in sources for row in link_rows(s.records)]
    if not rows:
        return None
    values, cells = [], []
    for _, r in rows:
        wall = U.fmt_seconds(r.round_wall_s) + (" (modelled)" if r.modelled else "")
        values.append(
            [
                r.config,
                r.link,
                r.emulation,
                r.uplink_mbit,
                r.round_wall_s,
                r.client_transfer_s,
                r.client_compute_cpu_s,
                r.time_to_accuracy.wall_s if r.time_to_accuracy else None,
            ]
        )
        cells.append(
            [
                r.config,
                r.link,
                r.emulation,
                U.MISSING if r.uplink_mbit is None else f"{r.uplink_mbit:g}",
                wall,
                U.fmt_seconds(r.client_transfer_s),
                U.fmt_seconds(r.client_compute_cpu_s),
                time_to_accuracy_text(r),
            ]
        )
    curves = model_curves(sources, rows)
    figure = None
    if any(r.uplink_mbit and r.round_wall_s for _, r in rows):
        figure = figs.add("links-round-time", round_time_figure(rows, curves), size=(8.5, 3.8))
    missing = sorted({m for _, r in rows for m in r.missing})
    modelled = [r.config for _, r in rows if r.modelled]
    if modelled:
        missing.insert(
            0,
            f"{', '.join(modelled)}: round walls here and on the cost–leakage chart are modelled on the link "
            "(emulation: model: each round measured on loopback plus the modelled transfers), not measured",
        )
    if any(r.emulation == "kernel" for _, r in rows):
        missing.append(
            "on kernel rows the client transfer column counts only what userspace applied (delays); the time "
            "spent in the kernel's rate-limited queues shows in the round wall"
        )
    return {
        "header": HEADER,
        "rows": cells,
        "csv": write_csv(files / "links.csv", HEADER, values).name,
        "figure": figure,
        "caption": (
            "Round wall time against the clients' uplink rate (log–log). Filled: emulated rounds (measured, mean of "
            "steady rounds); hollow: the transfer model's prediction for the same link from another run of the "
            "protection (its line's basis); lines: the model swept over the uplink (other link figures as in "
            "its basis: "
            + "; ".join(f"{c.protection}: {c.basis}" for c in curves)
            + "). Crosses: modelled runs (emulation: model), never measured."
        ),
        "choose": choose_per_link([r for _, r in rows]),
        "notes": missing,
    }
