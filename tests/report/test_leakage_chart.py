"""The cost-vs-leakage chart, checked on its drawn data: one Pareto set ringed in every panel (the text's),
bounded SSIM bars, markers by mode, readable ticks, total CPU beside host CPU, the strip, modelled markers."""

from __future__ import annotations

import itertools
from dataclasses import replace
from pathlib import Path

import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from hebench.analysis.choose import decide_set
from hebench.analysis.options import Option, best_attack, options_for
from hebench.analysis.pareto import Interval
from hebench.report.leakage_chart import (
    MARKERS,
    chart_caption,
    cost_leakage,
    costs_shown,
)
from hebench.report.load import load_source
from hebench.report.log_ticks import round_ticks
from hebench.results.records import AttackSummaryRecord

RUN = Path(__file__).resolve().parents[1] / "fixtures" / "run-offload"


def rounds(v: float, spread: float = 0.02, n: int = 6) -> Interval:
    return Interval.of([v * (1 + spread * (-1) ** i) for i in range(n)])


def option(
    name: str,
    cpu: float,
    recovered: int | None,
    kind: str = "host-he",
    total: float | None = None,
    modelled: bool = False,
    baseline: bool = False,
) -> Option:
    costs = {"cpu": rounds(cpu), "total_cpu": rounds(total or cpu), "bytes": rounds(cpu * 2), "time": rounds(1.0)}
    leak = rate = None
    if recovered is not None:
        ssim = recovered / 10
        leak = Interval(ssim, max(ssim - 0.5, 0.0), min(ssim + 0.5, 1.0), sd=0.5, n=10)  # ± 0.5, bounded
        rate = Interval.rate(recovered, 10)
    return Option(
        config=name,
        costs=costs,
        leakage=leak,
        recovered=rate,
        modelled=modelled,
        baseline=baseline,
        kind=kind,
        engines=total is not None,
    )


OPTIONS = [
    option("raw", 1.0, 9, "raw", baseline=True),
    option("ckks", 7.0, 0),
    option("compact", 2.5, 0, "compact"),
    option("offload", 1.2, 0, "offload", total=8.0),  # cheap on the host, dear in total
    option("selective", 1.1, 8, "selective"),  # cheapest, but leaks
    option("worse", 9.0, 9),  # dominated by ckks
    option("unattacked", 2.0, None),
    option("tee", 1.2, 0, modelled=True),  # would be in the set if mixed in
]


def drawn(options: list[Option]) -> Figure:
    fig = Figure(figsize=(11, 6), layout="constrained")
    FigureCanvasAgg(fig)
    cost_leakage(options)(fig)
    fig.draw_without_rendering()
    return fig


def ringed(ax) -> set[tuple[float, float]]:
    return {tuple(p) for c in ax.collections if c.get_gid() == "pareto-set" for p in c.get_offsets()}


def test_one_pareto_set_the_texts_is_ringed_in_every_panel():
    members = decide_set(OPTIONS).members
    assert members == ["compact", "offload", "selective", "unattacked"]  # ckks and worse: dominated by compact
    fig = drawn(OPTIONS)
    costs = costs_shown(OPTIONS)
    assert costs == ["cpu", "total_cpu", "bytes", "time"]  # total CPU beside host CPU: an engine ran
    for col, cost in enumerate(costs):
        top, strip = fig.axes[col], fig.axes[len(costs) + col]
        attacked = {(o.costs[cost].value, o.leakage.value) for o in OPTIONS if o.name in members and o.leakage}
        assert ringed(top) == attacked, cost  # the same configurations in every panel, whatever its own order
        assert ringed(strip) == {(OPTIONS[6].costs[cost].value, 0.0)}


def test_offload_is_drawn_at_its_total_cpu_too():
    fig = drawn(OPTIONS)
    offload = [line for line in fig.axes[1].get_lines() if line.get_gid() == "offload"]
    assert offload and offload[0].get_xdata()[0] == pytest.approx(8.0)
    assert fig.axes[1].get_title().startswith("total CPU ×raw (host + engine)")


def test_ssim_bars_stay_within_zero_and_one():
    fig = drawn(OPTIONS)
    for ax in fig.axes[:4]:
        for coll in ax.collections:
            if coll.get_gid() == "pareto-set":
                continue
            for seg in coll.get_segments():
                if seg[0][0] == seg[1][0]:  # a vertical bar
                    assert all(0.0 <= y <= 1.0 for _, y in seg), seg


def test_markers_differ_by_mode_not_only_by_colour():
    fig = drawn(OPTIONS)
    marker: dict[str, str] = {}
    for line in fig.axes[0].get_lines():  # the data line comes before its error bars' caps
        marker.setdefault(line.get_gid(), line.get_marker())
    assert len({marker[k] for k in ("offload", "compact", "ckks", "selective", "raw")}) == 5
    assert marker["offload"] == MARKERS["offload"] and marker["raw"] == MARKERS["raw"]
    assert marker["tee"] == "D"
    tee = next(line for line in fig.axes[0].get_lines() if line.get_gid() == "tee")
    assert tee.get_markerfacecolor() == "none"


def test_cost_ticks_are_few_round_ratios_whose_labels_never_touch():
    assert round_ticks(0.8, 5.8) == [1.0, 2.0, 5.0]  # not "5× 6×7×8×9×"
    assert round_ticks(0.9, 1.4) == [0.9, 1.0, 1.1, 1.2, 1.3]  # a narrow range still labelled, 1× included
    assert len(round_ticks(0.5, 1e4)) <= 5
    fig = drawn(OPTIONS)
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes[4:]:  # the bottom row carries the labels
        labels = [t for t in ax.get_xticklabels() if t.get_text() and t.get_visible()]
        assert 1 <= len(labels) <= 5 and all(t.get_text().endswith("×") for t in labels)
        boxes = sorted((t.get_window_extent(renderer) for t in labels), key=lambda b: b.x0)
        assert all(a.x1 < b.x0 for a, b in itertools.pairwise(boxes)), [t.get_text() for t in labels]
        assert not any(t.get_text() for t in ax.xaxis.get_minorticklabels())


def test_the_caption_names_only_what_is_drawn():
    text = chart_caption(OPTIONS)
    assert "Ringed in every panel" in text and "Hollow diamonds" in text and "strip below" in text
    assert "Dashed" not in text
    plain = [o for o in OPTIONS if o.leakage and not o.modelled]
    text = chart_caption(plain)
    assert "Hollow diamonds" not in text and "strip" not in text
    thin = [Option(config=o.config, costs={"cpu": Interval.of([o.costs["cpu"].value])}) for o in OPTIONS[:3]]
    assert "Nothing is ringed" in chart_caption(thin)


def test_every_cost_axis_is_log_and_the_legend_sits_outside_the_axes():
    fig = drawn(OPTIONS)
    assert all(ax.get_xscale() == "log" for ax in fig.axes)
    assert not any(ax.get_legend() for ax in fig.axes) and len(fig.legends) == 1
    legend_box = fig.legends[0].get_window_extent()
    assert all(not legend_box.overlaps(ax.get_window_extent()) for ax in fig.axes)


def test_no_empty_panel_and_no_strip_without_unattacked_configurations():
    no_time = [
        Option(config=o.config, costs={"cpu": o.costs["cpu"], "bytes": o.costs["bytes"]}, leakage=o.leakage)
        for o in OPTIONS
        if o.leakage
    ]
    fig = drawn(no_time)
    assert len(fig.axes) == 2 and [ax.get_title() for ax in fig.axes] == ["host CPU ×raw", "upload bytes ×raw"]


def summary(plan: str, ssim: float, config: str | None = None) -> AttackSummaryRecord:
    rec = AttackSummaryRecord(
        plan=plan,
        attack="dlg",
        view="raw",
        ratio=0.0,
        model="mlp",
        batch_size=1,
        images=2,
        seeds=1,
        restarts=1,
        scores={"ssim": {"mean": ssim, "std": 0.6, "min": ssim - 0.1, "max": ssim + 0.1}, "n": 2},
    )
    if config:
        object.__setattr__(rec, "config", config)  # as a later record kind that names its configuration
    return rec


def test_attacks_map_to_configurations_by_plan_name_longest_label_first():
    configs = ["host-he/ckks", "host-he/ckks/sel-random-0.2"]
    attacks = [summary("host-he/ckks", 0.1), summary("host-he/ckks/sel-random-0.2/fedml-he-zeros", 0.7)]
    attacks.append(summary("host-he/ckks/sel-random-0.2", 0.4))
    assert best_attack("host-he/ckks", configs, attacks).scores["ssim"]["mean"] == 0.1
    assert best_attack("host-he/ckks/sel-random-0.2", configs, attacks).plan.endswith("fedml-he-zeros")  # the best
    assert best_attack("host-he/ckks", configs, [summary("other", 0.9, config="host-he/ckks")]).plan == "other"


def test_options_from_a_recorded_run_plot_the_tables_ratio_of_means_with_the_per_round_spread():
    source = load_source(RUN)
    options = options_for(source.rows, [summary("raw", 0.8)])
    raw, he, nic = options
    assert raw.baseline and raw.leakage.value == pytest.approx(0.8) and he.leakage is None
    assert raw.leakage.lo >= 0.7 and raw.leakage.hi <= 0.9  # ± 0.6 bounded by the lowest and highest seen
    assert raw.costs["cpu"].value == pytest.approx(1.0)
    row = source.rows[1]
    assert he.costs["bytes"].value == row.bytes_overhead_vs_raw  # the tables' ratio, exactly
    assert he.costs["bytes"].n == row.steady_rounds and he.costs["bytes"].lo <= he.costs["bytes"].value
    assert nic.engines and nic.costs["total_cpu"].value == pytest.approx(source.rows[2].total_cpu_overhead_vs_raw)
    assert nic.costs["total_cpu"].value > nic.costs["cpu"].value  # the engine's CPU counted


def test_a_panel_left_out_of_the_ranking_rings_nobody_and_the_caption_says_why():
    # #40: the chart ringed Pareto members in the round-time panel its caption said was not ranked
    contended = [replace(o, contended=True) for o in OPTIONS]
    members = decide_set(contended).members
    assert members and "time" not in decide_set(contended).measures
    fig = drawn(contended)
    costs = costs_shown(contended)
    for col, cost in enumerate(costs):
        rings = ringed(fig.axes[col]) | ringed(fig.axes[len(costs) + col])
        assert bool(rings) == (cost != "time"), cost
    text = chart_caption(contended)
    assert "Round time is drawn but not ranked, and nothing is ringed in its panel: wall times measured under" in text
    assert "Ringed in the host CPU, total CPU (host + engine) and upload bytes panels" in text
    assert "every panel" not in text


def test_a_chart_under_another_threat_model_says_whose_view_was_attacked():
    # #40: the outside observer's chart said "from what that configuration's aggregator saw"
    assert "from what that configuration's aggregator saw" in chart_caption(OPTIONS)
    observer = chart_caption(OPTIONS, threat="observer")
    assert "aggregator" not in observer and "an outside network observer read on that configuration's wire" in observer
    assert "2 colluding share holders held" in chart_caption(OPTIONS, threat="share-holders:2")
