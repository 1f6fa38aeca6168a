"""Report figures with matplotlib: each returned as inline SVG and saved as PNG and SVG."""

from __future__ import annotations

import io
import math
import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, MaxNLocator

from hebench.analysis.defended import attack_name
from hebench.analysis.privacy_curves import anchors, privacy_curves
from hebench.analysis.summary import SummaryRow
from hebench.results.records import AttackSummaryRecord, RoundRecord

CLIENT_PHASES = ("train", "encrypt", "serialize", "send", "deserialize", "decrypt", "evaluate")
COLORS = dict(zip((*CLIENT_PHASES, "aggregate"), plt.get_cmap("tab10").colors, strict=False))


class FigureSet:
    """Collects figures: inline SVG for the HTML, PNG and SVG files beside it.

    Each figure is rendered once per format: the SVG once (its text is both the
    file and the inline copy, which before was a third render), the PNG once.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.files: list[Path] = []

    def add(self, name: str, draw: Callable[[Figure], None], size: tuple[float, float] = (7.5, 3.6)) -> str:
        fig = plt.figure(figsize=size, layout="constrained")
        try:
            draw(fig)
            self.folder.mkdir(parents=True, exist_ok=True)
            buf = io.StringIO()
            fig.savefig(buf, format="svg")
            png = self.folder / f"{name}.png"
            fig.savefig(png, dpi=150)
        finally:
            plt.close(fig)
        svg = buf.getvalue()
        path = self.folder / f"{name}.svg"
        path.write_text(svg, encoding="utf-8")
        self.files += [png, path]
        return svg[svg.index("<svg") :]  # drop the XML prologue for inlining


SPAN_FOR_LOG = 10.0  # values spanning at least this factor are drawn on a log axis
MIN_RELATIVE_RANGE = 0.02  # a linear y axis spans at least this share of its values' magnitude
MIN_ABSOLUTE_RANGE = 1e-3  # ... and at least this much: a 1e-7 difference is not stretched to full height
LABEL_SIZE, TITLE_SIZE = 9, 10


def spans_orders(values: Sequence[float | None]) -> bool:
    """True when the positive values differ by SPAN_FOR_LOG or more: a linear axis would hide the small ones."""
    positive = [v for v in values if v is not None and v > 0]
    return len(positive) > 1 and max(positive) / min(positive) >= SPAN_FOR_LOG


def _phase_values(rows: Sequence[SummaryRow]) -> dict[str, list[float]]:
    """Phase → wall time per round of each row: client phases (the engine's under offload) and aggregation."""
    out = {}
    for phase in (*CLIENT_PHASES, "aggregate"):
        values = []
        for r in rows:
            source = (
                r.aggregator_wall_s
                if phase == "aggregate"
                else (r.engine_wall_s if r.uses_engines and phase in r.engine_wall_s else r.client_wall_s)
            )
            values.append(source.get(phase) or 0.0)
        if any(values):
            out[phase] = values
    return out


def phase_bars(rows: Sequence[SummaryRow]) -> Callable[[Figure], None]:
    """Wall time per phase per round: stacked bars when comparable, else one marker per phase on a log axis
    beside the total, so raw and CKKS stay visible next to Paillier."""
    phases = _phase_values(rows)
    totals = [sum(v[i] for v in phases.values()) for i in range(len(rows))]
    log = spans_orders(totals)

    def draw(fig: Figure) -> None:
        ax = fig.subplots()
        labels = [r.config for r in rows]
        y = list(range(len(rows)))
        if log:
            ax.barh(y, totals, color="#d9dee3", label="total")
            markers = "o s D ^ v P X *".split()
            for k, (phase, values) in enumerate(phases.items()):
                pts = [(v, i) for i, v in enumerate(values) if v > 0]
                ax.scatter(
                    [p[0] for p in pts],
                    [p[1] for p in pts],
                    marker=markers[k % len(markers)],
                    color=COLORS[phase],
                    label=phase,
                    zorder=3,
                    s=36,
                )
            ax.set_xscale("log")
            ax.set_xlabel("wall time per round (s, log scale)", fontsize=LABEL_SIZE)
        else:
            bottom = [0.0] * len(rows)
            for phase, values in phases.items():
                ax.barh(y, values, left=bottom, label=phase, color=COLORS[phase])
                bottom = [b + v for b, v in zip(bottom, values, strict=True)]
            ax.set_xlabel("wall time per round (s)", fontsize=LABEL_SIZE)
        ax.set_yticks(y, labels)
        ax.tick_params(labelsize=LABEL_SIZE)
        ax.invert_yaxis()
        fig.legend(loc="outside right upper", fontsize=LABEL_SIZE, frameon=False)

    return draw


def paired_bars(rows: Sequence[SummaryRow], items: list[tuple[str, str, float]]) -> Callable[[Figure], None]:
    """One panel per (field of the summary row, title, scale) that some row has; log where values span orders."""
    shown = [item for item in items if any(getattr(r, item[0]) for r in rows)]

    def draw(fig: Figure) -> None:
        axes = fig.subplots(1, max(len(shown), 1), squeeze=False)[0]
        labels = [r.config for r in rows]
        for ax, (key, title, scale) in zip(axes, shown, strict=True):
            values = [(getattr(r, key) or 0.0) * scale for r in rows]
            ax.barh(labels, values, color="#4c72b0")
            if spans_orders(values):
                ax.set_xscale("log")
                title += ", log"
            ax.set_title(title, fontsize=TITLE_SIZE)
            ax.invert_yaxis()
            ax.tick_params(labelsize=LABEL_SIZE)
        for ax in axes[1:]:
            ax.set_yticklabels([])

    return draw


COINCIDE_SHARE = 0.002  # curves closer than this share of the plotted range are drawn as one line


def _linear_range(values: Sequence[float]) -> float:
    """The y range a linear plot of ``values`` spans (at least the minimum range)."""
    lo, hi = min(values), max(values)
    return max(hi - lo, MIN_RELATIVE_RANGE * max(abs(lo), abs(hi)), MIN_ABSOLUTE_RANGE)


def coinciding(records: Sequence[RoundRecord], key: str, log: bool = False) -> list[list[str]]:
    """Groups of configurations whose curves of ``key`` coincide on the plot (closer than COINCIDE_SHARE of the
    plotted range at every round; in decades on a log plot): drawn as one line, and said so."""
    series: dict[str, dict[int, float]] = {}
    for label in dict.fromkeys(r.config for r in records):
        pts = {r.round: getattr(r, key) for r in records if r.config == label and getattr(r, key) is not None}
        if log:
            pts = {k: math.log10(v) for k, v in pts.items() if v > 0}
        if pts:
            series[label] = pts
    values = [v for pts in series.values() for v in pts.values()]
    if not values:
        return []
    tolerance = COINCIDE_SHARE * (max(max(values) - min(values), 1.0) if log else _linear_range(values))
    groups: list[list[str]] = []
    for label, pts in series.items():
        for group in groups:
            ref = series[group[0]]
            if ref.keys() == pts.keys() and all(abs(ref[k] - pts[k]) <= tolerance for k in pts):
                group.append(label)
                break
        else:
            groups.append([label])
    return [g for g in groups if len(g) > 1]


def coincide_note(groups: list[list[str]]) -> str:
    """``"raw and host-he coincide"`` for each group; empty without any."""
    return "; ".join(f"{', '.join(g[:-1])} and {g[-1]} coincide (one line drawn)" for g in groups)


def _at_least_range(ax: Axes, values: Sequence[float]) -> None:
    """Widen a linear y range that would stretch a tiny difference to full height."""
    lo, hi = min(values), max(values)
    need = _linear_range(values)
    if hi - lo < need:
        mid = (hi + lo) / 2
        ax.set_ylim(mid - need / 2, mid + need / 2)


def curves(records: Sequence[RoundRecord], key: str, ylabel: str, log: bool = False) -> Callable[[Figure], None]:
    """One line per configuration over rounds (integer ticks); identical curves drawn once and named together."""
    groups = {g[0]: g for g in coinciding(records, key, log)}
    hidden = {label for g in groups.values() for label in g[1:]}

    def draw(fig: Figure) -> None:
        ax = fig.subplots()
        drawn: list[float] = []
        for label in dict.fromkeys(r.config for r in records):
            if label in hidden:
                continue
            pts = sorted(
                (r.round, getattr(r, key)) for r in records if r.config == label and getattr(r, key) is not None
            )
            if pts:
                name = textwrap.fill(" = ".join(groups[label]) + " (coincide)", 70) if label in groups else label
                ax.plot([p[0] + 1 for p in pts], [p[1] for p in pts], marker="o", label=name)
                drawn += [p[1] for p in pts]
        ax.set_xlabel("round", fontsize=LABEL_SIZE)
        ax.set_ylabel(ylabel, fontsize=LABEL_SIZE)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.tick_params(labelsize=LABEL_SIZE)
        if log:
            ax.set_yscale("log")
        else:
            ax.ticklabel_format(axis="y", useOffset=False)
            if drawn:
                _at_least_range(ax, drawn)
        if drawn:
            fig.legend(loc="outside lower center", ncols=2, fontsize=LABEL_SIZE, frameon=False)

    return draw


def library_ops(libraries: list[dict[str, Any]], size: int) -> Callable[[Figure], None]:
    ops = ("encrypt", "decrypt", "add", "multiply_plain", "serialize", "deserialize")

    def draw(fig: Figure) -> None:
        ax = fig.subplots()
        recs = [r for r in libraries if r["size"] == size]
        width = 0.8 / max(len(recs), 1)
        for k, rec in enumerate(recs):
            values = [rec["operations"][op]["wall_s_per_value"] * 1e6 for op in ops]
            ax.bar([i + k * width for i in range(len(ops))], values, width, label=rec["adapter"])
        ax.set_xticks([i + width * (len(recs) - 1) / 2 for i in range(len(ops))], ops, fontsize=LABEL_SIZE)
        ax.set_yscale("log")
        ax.set_ylabel(f"µs per value ({size:,} values)", fontsize=LABEL_SIZE)
        ax.tick_params(labelsize=LABEL_SIZE)
        fig.legend(loc="outside right upper", fontsize=LABEL_SIZE, frameon=False)

    return draw


def _bounded_ssim(a: AttackSummaryRecord) -> tuple[float, float, float]:
    """(mean, below, above): ± std bounded by the lowest and highest SSIM the attack scored."""
    sc = a.scores["ssim"]
    mean, std = sc["mean"], sc.get("std", 0.0)
    lo, hi = max(mean - std, sc.get("min", mean - std)), min(mean + std, sc.get("max", mean + std))
    return mean, max(mean - lo, 0.0), max(hi - mean, 0.0)


def _recovered_note(ax: Axes, a: AttackSummaryRecord, x: float) -> None:
    """``6/12`` beside a point: the images that attack recovered."""
    s = a.scores.get("success")
    if s and s.get("n"):
        y = a.scores["ssim"]["mean"]
        ax.annotate(f"{s['k']}/{s['n']}", (x, y), textcoords="offset points", xytext=(7, 3), fontsize=8)


def frontier(attacks: Sequence[AttackSummaryRecord], costs: dict[float, float] | None) -> Callable[[Figure], None]:
    """Leakage against the fraction encrypted p, one marker series per curve, anchored at p = 0 (raw) and p = 1
    (full HE) where the same attack ran on those views; right: upload at each measured p. Markers only: nothing
    between measured points was measured, so no line joins them."""
    curves = privacy_curves(attacks)
    shapes = "o v ^ < > P X h".split()

    def draw(fig: Figure) -> None:
        ax = fig.subplots(1, 2 if costs else 1, squeeze=False)[0]
        seen: set[int] = set()
        ticks = {0.0, 1.0}
        for k, (label, points) in enumerate(curves.items()):
            ys = [_bounded_ssim(a) for a in points]
            ax[0].errorbar(
                [a.ratio for a in points],
                [y[0] for y in ys],
                yerr=[[y[1] for y in ys], [y[2] for y in ys]],
                fmt=shapes[k % len(shapes)],
                markersize=7,
                capsize=3,
                label=label,
            )
            ticks |= {a.ratio for a in points}
            for a in points:
                _recovered_note(ax[0], a, a.ratio)
            ends = anchors(attacks, points[0])
            for end, marker, name in (
                (ends.raw, "s", "p = 0: raw, nothing encrypted"),
                (ends.full, "D", "p = 1: full HE"),
            ):
                if end is None or id(end) in seen:
                    continue
                seen.add(id(end))
                mean, below, above = _bounded_ssim(end)
                ax[0].errorbar(
                    [0.0 if marker == "s" else 1.0],
                    [mean],
                    yerr=[[below], [above]],
                    fmt=marker,
                    markersize=7,
                    capsize=3,
                    color="#333333",
                    label=f"{name} ({attack_name(end)})",
                )
                _recovered_note(ax[0], end, 0.0 if marker == "s" else 1.0)
        ax[0].set_xlim(-0.05, 1.05)
        ax[0].set_xticks(sorted(ticks))
        ax[0].xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}"))
        ax[0].set_xlabel("fraction of parameters encrypted (p)", fontsize=LABEL_SIZE)
        ax[0].set_ylabel("reconstruction SSIM\n(mean, ± std bounded; k/n recovered)", fontsize=LABEL_SIZE)
        ax[0].set_ylim(-0.05, 1.05)
        ax[0].tick_params(labelsize=LABEL_SIZE)
        if costs:
            xs = sorted(costs)
            ax[1].plot(xs, [costs[x] / 1e6 for x in xs], marker="s", linestyle="none", color="#dd8452")
            for x in xs:
                ax[1].annotate(
                    f"{costs[x] / 1e6:.3g} MB",
                    (x, costs[x] / 1e6),
                    textcoords="offset points",
                    xytext=(6, 4),
                    fontsize=8,
                )
            ax[1].set_xlim(-0.05, 1.15)
            ax[1].set_ylim(0, max(costs.values()) / 1e6 * 1.2)
            ax[1].set_xticks(xs)
            ax[1].xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}"))
            ax[1].set_xlabel("fraction of parameters encrypted (p)", fontsize=LABEL_SIZE)
            ax[1].set_ylabel("upload per client per round (MB)", fontsize=LABEL_SIZE)
            ax[1].tick_params(labelsize=LABEL_SIZE)
        fig.legend(loc="outside lower center", ncols=2, fontsize=LABEL_SIZE, frameon=False)

    return draw
