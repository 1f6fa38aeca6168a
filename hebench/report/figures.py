"""Report figures with matplotlib: each returned as inline SVG and saved as PNG and SVG."""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from hebench.report.privacy_curves import privacy_curves
from hebench.results.records import AttackSummaryRecord, RoundRecord
from hebench.results.summary import SummaryRow

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


def phase_bars(rows: Sequence[SummaryRow]) -> Callable[[Figure], None]:
    """Wall time per phase per round, stacked: client (or engine for offload) phases and aggregation."""

    def draw(fig: Figure) -> None:
        ax = fig.subplots()
        labels = [r.config for r in rows]
        bottom = [0.0] * len(rows)
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
                ax.barh(labels, values, left=bottom, label=phase, color=COLORS[phase])
                bottom = [b + v for b, v in zip(bottom, values, strict=True)]
        ax.set_xlabel("wall time per round (s)")
        ax.invert_yaxis()
        ax.legend(ncols=4, fontsize=8, loc="lower right")

    return draw


def paired_bars(rows: Sequence[SummaryRow], items: list[tuple[str, str, float]]) -> Callable[[Figure], None]:
    """One panel per (field of the summary row, title, scale)."""

    def draw(fig: Figure) -> None:
        axes = fig.subplots(1, len(items), squeeze=False)[0]
        labels = [r.config for r in rows]
        for ax, (key, title, scale) in zip(axes, items, strict=True):
            ax.barh(labels, [(getattr(r, key) or 0.0) * scale for r in rows], color="#4c72b0")
            ax.set_title(title, fontsize=9)
            ax.invert_yaxis()
            ax.tick_params(labelsize=7)
        for ax in axes[1:]:
            ax.set_yticklabels([])

    return draw


def curves(records: Sequence[RoundRecord], key: str, ylabel: str, log: bool = False) -> Callable[[Figure], None]:
    """One line per configuration: a round record's field over rounds."""

    def draw(fig: Figure) -> None:
        ax = fig.subplots()
        configs = dict.fromkeys(r.config for r in records)
        for label in configs:
            pts = sorted(
                (r.round, getattr(r, key)) for r in records if r.config == label and getattr(r, key) is not None
            )
            if pts:
                ax.plot([p[0] + 1 for p in pts], [p[1] for p in pts], marker="o", label=label)
        ax.set_xlabel("round")
        ax.set_ylabel(ylabel)
        if log:
            ax.set_yscale("log")
        ax.legend(fontsize=7)

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
        ax.set_xticks([i + width * (len(recs) - 1) / 2 for i in range(len(ops))], ops, fontsize=8)
        ax.set_yscale("log")
        ax.set_ylabel(f"µs per value ({size:,} values)")
        ax.legend(fontsize=7, ncols=3)

    return draw


def frontier(attacks: Sequence[AttackSummaryRecord], costs: dict[float, float] | None) -> Callable[[Figure], None]:
    def draw(fig: Figure) -> None:
        ax = fig.subplots(1, 2 if costs else 1, squeeze=False)[0]
        for label, points in privacy_curves(attacks).items():
            ax[0].errorbar(
                [a.ratio for a in points],
                [a.scores["ssim"]["mean"] for a in points],
                yerr=[a.scores["ssim"]["std"] for a in points],
                marker="o",
                capsize=3,
                label=label,
            )
        ax[0].set_xlabel("fraction of parameters encrypted (p)")
        ax[0].set_ylabel("reconstruction SSIM (mean ± std)")
        ax[0].set_ylim(-0.1, 1.05)
        ax[0].legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.16), frameon=False)  # off the data
        if costs:
            xs = sorted(costs)
            ax[1].plot(xs, [costs[x] / 1e6 for x in xs], marker="s", color="#dd8452")
            ax[1].set_xlabel("fraction of parameters encrypted (p)")
            ax[1].set_ylabel("upload per client per round (MB)")

    return draw
