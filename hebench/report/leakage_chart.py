"""The report's centrepiece: every configuration's cost (×raw, log) against its leakage (best attack's SSIM).

One panel per cost that any configuration has. Attacked configurations sit in the
upper axes with their SSIM spread; configurations with no attack sit on a strip
below ("not attacked"), never dropped. Modelled rows are hollow and labelled. The
Pareto frontier (minimise the cost and the leakage, ties within the spread kept) is
drawn over measured, attacked configurations only: modelled figures are never mixed in.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, NullFormatter

from hebench.report.options import COSTS, LEAKAGE, Option
from hebench.report.pareto import pareto_set

FRONTIER = "Pareto frontier"


def costs_shown(options: Sequence[Option]) -> list[str]:
    """The costs at least one configuration has: one panel each, none empty."""
    return [c for c in COSTS if any(o.costs.get(c) is not None for o in options)]


def frontier(options: Sequence[Option], cost: str) -> list[Option]:
    """Measured, attacked protections (raw, the reference, left out) no other dominates on (``cost``, leakage)."""
    usable = {o.name: o for o in options if not (o.modelled or o.baseline) and o.leakage and o.costs.get(cost)}
    keep = pareto_set(
        {k: {cost: o.costs[cost], LEAKAGE: o.measures[LEAKAGE]} for k, o in usable.items()}, (cost, LEAKAGE)
    )
    return sorted((usable[k] for k in keep), key=lambda o: o.costs[cost].value)  # type: ignore[union-attr]


def legend_columns(options: Sequence[Option]) -> int:
    """Two legend columns when the labels fit side by side under the panels, else one."""
    return 2 if max((len(legend_label(o)) for o in options), default=0) <= 60 else 1


def chart_size(options: Sequence[Option], width: float = 11.0) -> tuple[float, float]:
    """Figure size: tall when some configuration was attacked, a short strip when none was; room for the legend."""
    lines = -(-(len(options) + 1) // legend_columns(options))  # + the frontier entry
    attacked = 4.4 if any(o.leakage for o in options) else 1.6
    strip = 1.0 if any(not o.leakage for o in options) else 0.0
    return width, attacked + strip + 0.22 * (lines + 1)


def legend_label(o: Option) -> str:
    """The configuration, its accuracy change against raw, and what kind of point it is."""
    parts = [o.name]
    if o.accuracy_loss is not None and not o.baseline:
        parts.append(f"accuracy {round(-o.accuracy_loss, 3) + 0.0:+.3f} vs raw")  # + 0.0: no "-0.000"
    if o.leakage is None:
        parts.append("not attacked")
    if o.modelled:
        parts.append("modelled")
    return " · ".join(parts)


def ratio_axis(ax: Axes, values: Sequence[float]) -> None:
    """Log x with plain ratio labels (``2×``, not ``2×10⁰``); minor ticks labelled only within one decade."""
    ax.set_xscale("log")
    ratio = FuncFormatter(lambda x, _: f"{x:.3g}×")
    ax.xaxis.set_major_formatter(ratio)
    positive = [v for v in values if v > 0]
    narrow = bool(positive) and max(positive) / min(positive) < 10
    ax.xaxis.set_minor_formatter(ratio if narrow else NullFormatter())


def cost_leakage(options: Sequence[Option]) -> Callable[[Figure], None]:
    """Draw the chart; the figure's legend names each configuration with its accuracy loss."""
    costs = costs_shown(options)
    attacked = [o for o in options if o.leakage is not None]
    unattacked = [o for o in options if o.leakage is None]
    palette = plt.get_cmap("tab20" if len(options) > 10 else "tab10").colors
    colour = {o.name: palette[i % len(palette)] for i, o in enumerate(options)}

    def point(ax, o: Option, cost: str, y: float, yerr: Sequence[float] | None = None) -> None:
        c = o.costs[cost]
        assert c is not None
        ax.errorbar(
            [c.value],
            [y],
            xerr=[[c.value - c.lo], [c.hi - c.value]],
            yerr=None if yerr is None else [[yerr[0]], [yerr[1]]],
            fmt="D" if o.modelled else "o",
            markersize=8,
            markerfacecolor="none" if o.modelled else colour[o.name],
            markeredgecolor=colour[o.name],
            markeredgewidth=1.6,
            ecolor=colour[o.name],
            capsize=3,
            label=legend_label(o),
            gid=o.name,
        )

    def draw(fig: Figure) -> None:
        if not costs:
            return
        heights = ([4] if attacked else []) + ([1] if unattacked else [])
        grid = fig.subplots(len(heights), len(costs), squeeze=False, sharex="col", height_ratios=heights)
        for col, cost in enumerate(costs):
            top = grid[0][col] if attacked else None
            strip = grid[-1][col] if unattacked else None
            if top is not None:
                for o in attacked:
                    if o.costs.get(cost) is not None:
                        leak = o.leakage
                        assert leak is not None
                        point(top, o, cost, leak.value, (leak.value - leak.lo, leak.hi - leak.value))
                line = frontier(options, cost)
                if line:
                    top.plot(
                        [o.costs[cost].value for o in line],  # type: ignore[union-attr]
                        [o.leakage.value for o in line],  # type: ignore[union-attr]
                        color="#444444",
                        linestyle="--",
                        linewidth=1.2,
                        marker="o",
                        markersize=15,
                        markerfacecolor="none",
                        zorder=0,
                        label=FRONTIER,
                        gid="pareto-frontier",
                    )
                top.set_ylim(-0.05, 1.05)
                top.set_title(COSTS[cost][0], fontsize=11)
                if col == 0:
                    top.set_ylabel("leakage: best attack's SSIM\n(mean ± std over images, seeds)", fontsize=10)
            if strip is not None:
                for o in unattacked:
                    if o.costs.get(cost) is not None:
                        point(strip, o, cost, 0.0)
                strip.set_yticks([])
                strip.set_ylim(-1, 1)
                if col == 0:
                    strip.set_ylabel("not\nattacked", fontsize=10, rotation=0, ha="right", va="center")
                if top is None:
                    strip.set_title(COSTS[cost][0], fontsize=11)
            bottom = grid[-1][col]
            ratio_axis(bottom, [v for o in options if (c := o.costs.get(cost)) for v in (c.lo, c.hi)])
            bottom.set_xlabel(f"{COSTS[cost][0]} (log)", fontsize=10)
            for ax in grid[:, col]:
                ax.tick_params(labelsize=9)
                ax.grid(True, which="major", alpha=0.3)
        handles: dict[str, object] = {}
        for ax in grid.flat:
            for h, label in zip(*ax.get_legend_handles_labels(), strict=True):
                handles.setdefault(label, h)
        fig.legend(
            handles.values(),
            handles.keys(),
            loc="outside lower center",
            ncols=legend_columns(options),
            fontsize=9,
            frameon=False,
        )

    return draw
