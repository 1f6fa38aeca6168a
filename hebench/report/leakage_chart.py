"""The report's centrepiece: every configuration's cost (×raw, log) against its leakage (best attack's SSIM).

One panel per cost that any configuration has: host CPU, total CPU (host + engine, where an
engine runs), upload bytes, round time. Attacked configurations sit in the upper axes with
their SSIM (bars ± std, bounded by the lowest and highest SSIM seen, so inside [0, 1] for
SSIMs there); configurations with no attack sit on a strip below ("not attacked"), never
dropped. A language model's rows give their exact-sequence rate (bars: Wilson 95 %); where a chart holds both
(a comparison of an image run with a language run) each measure has its own row of panels and its own y axis,
images above text, so no axis mixes SSIM with a rate of sequences. Marker shapes tell modes apart;
modelled rows are hollow diamonds. The Pareto set of "what to choose" (decided over every ranked measure at
once, on evidence) is ringed in the panels of
the costs it ranks (never in a panel "what to choose" leaves out of the ranking, e.g. round time under
CPU contention), so the chart and the text name the same configurations; with too little evidence
nothing is ringed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from hebench.analysis.choose import NAMES, Choice, decide_set, measure_name, measures_of
from hebench.analysis.defended import ATTACK_NAMES
from hebench.analysis.options import COSTS, DEFAULT_THREAT, LEAKAGE, Option
from hebench.analysis.threats import what_was_seen
from hebench.protections import find_mode, get_mode, mode_names
from hebench.report.log_ticks import log_axis

SET_LABEL = "ringed: in the Pareto set of what to choose"
MODIFIER_MARKERS = {"compact": "p", "selective": "v", "dp": "*", "tls": "h", "other": "o"}
MARKERS = {**{name: get_mode(name).chart_marker for name in mode_names()}, **MODIFIER_MARKERS}  # by Option.kind


def marker_of(kind: str) -> str:
    """An option kind's marker: a mode's own (its spec's ``chart_marker``, plugins' included) or a modifier's."""
    spec = find_mode(kind)
    return spec.chart_marker if spec is not None else MODIFIER_MARKERS.get(kind, "o")


def costs_shown(options: Sequence[Option]) -> list[str]:
    """The costs at least one configuration has (total CPU only beside an engine): one panel each, none empty."""
    return [m for m in measures_of(options) if m != LEAKAGE]


def legend_columns(options: Sequence[Option]) -> int:
    """Two legend columns when the labels fit side by side under the panels, else one."""
    return 2 if max((len(legend_label(o)) for o in options), default=0) <= 60 else 1


def leakage_rows(options: Sequence[Option]) -> list[list[Option]]:
    """The attacked options by what their leakage measures, one row of panels each: images (SSIM), then language
    models (exact-sequence rate); a row only where some option has that measure."""
    attacked = [o for o in options if o.leakage is not None]
    rows = [[o for o in attacked if o.leakage_kind != "text"], [o for o in attacked if o.leakage_kind == "text"]]
    return [r for r in rows if r]


def chart_size(options: Sequence[Option], width: float = 11.0) -> tuple[float, float]:
    """Figure size: tall when some configuration was attacked (taller with a row per leakage measure), a short
    strip when none was; room for the legend."""
    lines = -(-(len(options) + 1) // legend_columns(options))  # + the Pareto-set entry
    attacked = {0: 1.6, 1: 4.4}.get(len(leakage_rows(options)), 7.4)
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


def y_label(attacked: Sequence[Option]) -> str:
    """The leakage axis: images' SSIM or language models' exact-sequence rate (the chart gives each its own row;
    both named only where a caller mixes them)."""
    kinds = {o.leakage_kind for o in attacked}
    if kinds == {"text"}:
        return "leakage: sequences recovered\nexactly (rate, Wilson 95 %)"
    if "text" in kinds:
        return "leakage: SSIM (images) /\nexact-sequence rate (text)"
    return "leakage: best attack's SSIM\n(mean ± std over images, seeds)"


def ratio_axis(ax: Axes, values: Sequence[float]) -> None:
    """Log x with plain ratio labels (``2×``, not ``2×10⁰``) at a few round ratios; minor ticks unlabelled."""
    positive = [v for v in values if v > 0] or [1.0]
    log_axis(ax, "x", min(positive) / 1.25, max(positive) * 1.25, lambda x: f"{x:.3g}×")


def members(options: Sequence[Option], choice: Choice | None = None) -> set[str]:
    """The names the chart rings: the Pareto set of "what to choose" when some difference is clear (its members
    that more evidence could not remove, as the text lists them), else none."""
    choice = choice or decide_set(options)
    return set(choice.settled) if choice.decided else set()


def ranked_costs(options: Sequence[Option], choice: Choice | None = None) -> list[str]:
    """The costs "what to choose" ranks on: the panels where its Pareto set is ringed."""
    choice = choice or decide_set(options)
    return [m for m in choice.measures if m != LEAKAGE]


def chart_caption(options: Sequence[Option], combined: bool = False, threat: str = DEFAULT_THREAT) -> str:
    """Says what the chart draws, and only that; ``threat``: whose view the attacks reconstructed from."""
    attacked = [o for o in options if o.leakage is not None]
    over = "steady rounds"
    if any(o.cold for o in options):  # as the tables' note says it
        over += " (over its rounds with the warm-up included where no steady round completed)"
    text = (
        "Cost against leakage, one point per configuration: x = a cost as a multiple of raw (log), the ratio of "
        f"its mean over {over} to raw's (the tables' ratio; bars: the range of the per-round ratios)"
    )
    images = [o for o in attacked if o.leakage_kind != "text"]
    texts = [o for o in attacked if o.leakage_kind == "text"]
    if images:
        names = sorted({ATTACK_NAMES.get(o.attack_name or "", o.attack_name or "") for o in images} - {""})
        text += (
            f"{'; in the upper row of panels' if texts else ''}, y = the SSIM of the best "
            f"{' / '.join(names) or 'attack'} reconstruction from {what_was_seen(threat)} "
            "(bars: ± std over images and seeds, bounded by the lowest and highest SSIM seen)"
        )
    if texts:
        kinds = sorted({"exact span" if o.attack_name == "span" else str(o.attack_name) for o in texts})
        seen = (
            "the aggregator's most revealing view"
            if threat == DEFAULT_THREAT
            else f"the most revealing view of {what_was_seen(threat)}"
        )
        text += (
            f"{'; in the lower row of panels, for the language-model rows' if images else ''}, y = the share of the "
            f"victim's sequences the {' / '.join(kinds)} attack recovered exactly (same tokens, same order) from "
            f"{seen} (bars: Wilson 95 % interval over sequences; ROUGE-1 in the tables)"
        )
        if images:
            text += (
                ". Images and text sit in separate rows of panels, each with its own y axis: an SSIM and a rate of "
                "sequences are not on one scale"
            )
    text += ". Marker shapes tell modes apart; the legend gives each configuration's accuracy change against raw."
    if any(o.modelled for o in options):
        text += " Hollow diamonds are modelled, not measured, and never in the Pareto set."
    if any(o.leakage is None for o in options):
        text += " Configurations with no attack sit on the strip below."
    choice = decide_set(options)
    shown = costs_shown(options)
    for m in (m for m in shown if m not in choice.measures):
        why = choice.unranked.get(m, "only modelled configurations have it")
        text += f" {_sentence_case(NAMES[m])} is drawn but not ranked, and nothing is ringed in its panel: {why}."
    if members(options, choice):
        ranked = ranked_costs(options, choice)
        where = (
            "every panel"
            if len(ranked) == len(shown)
            else f"the {_listed(NAMES[m] for m in ranked)} panel{'s' if len(ranked) > 1 else ''}"
        )
        text += (
            f" Ringed in {where}: the Pareto set of what to choose below, decided over "
            f"{_listed(measure_name(choice, m) for m in choice.measures)} at once on 95 % intervals."
        )
    else:
        text += " Nothing is ringed: the evidence decides no Pareto set (see below)."
    if combined:
        text += " Each run's costs are ratios to its own raw row."
    return text


def _listed(words: Iterable[str]) -> str:
    words = list(words)
    return ", ".join(words[:-1]) + " and " + words[-1] if len(words) > 1 else "".join(words)


def _sentence_case(text: str) -> str:
    return text[:1].upper() + text[1:]


def cost_leakage(options: Sequence[Option]) -> Callable[[Figure], None]:
    """Draw the chart; the figure's legend names each configuration with its accuracy loss."""
    costs = costs_shown(options)
    measured = leakage_rows(options)  # one row of panels per leakage measure
    unattacked = [o for o in options if o.leakage is None]
    palette = plt.get_cmap("tab20" if len(options) > 10 else "tab10").colors
    colour = {o.name: palette[i % len(palette)] for i, o in enumerate(options)}
    choice = decide_set(options)
    ringed = members(options, choice)
    ranked = set(ranked_costs(options, choice))

    def point(ax: Axes, o: Option, cost: str, y: float, yerr: Sequence[float] | None = None) -> None:
        c = o.costs[cost]
        assert c is not None
        ax.errorbar(
            [c.value],
            [y],
            xerr=[[c.value - c.lo], [c.hi - c.value]],
            yerr=None if yerr is None else [[yerr[0]], [yerr[1]]],
            fmt="D" if o.modelled else marker_of(o.kind),
            markersize=8,
            markerfacecolor="none" if o.modelled else colour[o.name],
            markeredgecolor=colour[o.name],
            markeredgewidth=1.6,
            ecolor=colour[o.name],
            capsize=3,
            label=legend_label(o),
            gid=o.name,
        )
        if o.name in ringed and cost in ranked:
            ax.scatter(
                [c.value],
                [y],
                s=330,
                facecolors="none",
                edgecolors="#333333",
                linewidths=1.4,
                zorder=0,
                label=SET_LABEL,
                gid="pareto-set",
            )

    def draw(fig: Figure) -> None:
        if not costs:
            return
        heights = [4] * len(measured) + ([1] if unattacked else [])
        grid = fig.subplots(len(heights), len(costs), squeeze=False, sharex="col", height_ratios=heights)
        for col, cost in enumerate(costs):
            strip = grid[-1][col] if unattacked else None
            for i, attacked in enumerate(measured):
                ax = grid[i][col]
                for o in attacked:
                    if o.costs.get(cost) is not None:
                        leak = o.leakage
                        assert leak is not None
                        point(ax, o, cost, leak.value, (leak.value - leak.lo, leak.hi - leak.value))
                ax.set_ylim(-0.05, 1.05)
                if i == 0:
                    ax.set_title(COSTS[cost][0], fontsize=10)
                if col == 0:
                    ax.set_ylabel(y_label(attacked), fontsize=10)
            if strip is not None:
                for o in unattacked:
                    if o.costs.get(cost) is not None:
                        point(strip, o, cost, 0.0)
                strip.set_yticks([])
                strip.set_ylim(-1, 1)
                if col == 0:
                    strip.set_ylabel("not\nattacked", fontsize=10, rotation=0, ha="right", va="center")
                if not measured:
                    strip.set_title(COSTS[cost][0], fontsize=10)
            bottom = grid[-1][col]
            ratio_axis(bottom, [v for o in options if (c := o.costs.get(cost)) for v in (c.lo, c.hi)])
            bottom.set_xlabel(f"{COSTS[cost][0].split(' (')[0]} (log)", fontsize=10)
            for ax in grid[:, col]:
                ax.tick_params(labelsize=9)
                ax.grid(True, which="major", alpha=0.3)
        handles: dict[str, object] = {}
        for o in options:  # one marker per configuration, as drawn (without its bars)
            handles[legend_label(o)] = Line2D(
                [],
                [],
                linestyle="none",
                marker="D" if o.modelled else marker_of(o.kind),
                markersize=8,
                markerfacecolor="none" if o.modelled else colour[o.name],
                markeredgecolor=colour[o.name],
                markeredgewidth=1.6,
            )
        if ringed & {o.name for o in options}:  # last: it explains the rings, it is not a configuration
            handles[SET_LABEL] = Line2D(
                [], [], linestyle="none", marker="o", markersize=15, markerfacecolor="none", markeredgecolor="#333333"
            )
        fig.legend(
            handles.values(),
            handles.keys(),
            loc="outside lower center",
            ncols=legend_columns(options),
            fontsize=9,
            frameon=False,
        )

    return draw
