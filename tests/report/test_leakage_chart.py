"""The cost-vs-leakage chart, checked on its data: frontier points, the not-attacked strip, modelled markers."""

from __future__ import annotations

from pathlib import Path

import pytest
from matplotlib.figure import Figure

from hebench.report.leakage_chart import FRONTIER, cost_leakage, frontier
from hebench.report.load import load_source
from hebench.report.options import Option, best_attack, options_for, steady_round_ratios
from hebench.report.pareto import Interval
from hebench.results.records import AttackSummaryRecord

RUN = Path(__file__).resolve().parents[1] / "fixtures" / "run-offload"


def at(v: float, spread: float = 0.0) -> Interval:
    return Interval(v, v - spread, v + spread)


def option(name: str, cpu: float, leak: float | None, modelled: bool = False, time: float | None = 1.0) -> Option:
    costs = {"cpu": at(cpu), "bytes": at(cpu * 2), "time": at(time) if time else None}
    return Option(config=name, costs=costs, leakage=at(leak, 0.02) if leak is not None else None, modelled=modelled)


OPTIONS = [
    option("raw", 1.0, 0.9),
    option("ckks", 7.0, 0.05),
    option("selective", 3.0, 0.5),
    option("worse", 9.0, 0.6),  # dominated by ckks
    option("unattacked", 2.0, None),
    option("tee", 1.2, 0.01, modelled=True, time=None),  # would be on the frontier if mixed in
]


def drawn(options: list[Option]) -> Figure:
    fig = Figure(figsize=(11, 6), layout="constrained")
    cost_leakage(options)(fig)
    return fig


def test_frontier_is_the_measured_attacked_pareto_set_by_cost():
    assert [o.config for o in frontier(OPTIONS, "cpu")] == ["raw", "selective", "ckks"]


def test_chart_draws_the_frontier_the_strip_and_hollow_modelled_points():
    fig = drawn(OPTIONS)
    top, strip = fig.axes[0], fig.axes[3]  # 2 rows × 3 costs
    lines = [line for line in top.get_lines() if line.get_label() == FRONTIER]
    assert len(lines) == 1 and list(lines[0].get_xdata()) == [1.0, 3.0, 7.0]
    assert list(lines[0].get_ydata()) == [0.9, 0.5, 0.05]
    assert strip.get_ylabel().replace("\n", " ") == "not attacked"
    assert {line.get_gid() for line in strip.get_lines() if line.get_gid()} == {"unattacked"}
    tee = next(line for line in top.get_lines() if line.get_gid() == "tee")
    assert tee.get_markerfacecolor() == "none" and tee.get_marker() == "D"
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert any(label.startswith("tee") and "modelled" in label for label in labels)
    assert any(label.startswith("unattacked") and "not attacked" in label for label in labels)


def test_every_cost_axis_is_log_and_the_legend_sits_outside_the_axes():
    fig = drawn(OPTIONS)
    assert all(ax.get_xscale() == "log" for ax in fig.axes)
    assert not any(ax.get_legend() for ax in fig.axes) and len(fig.legends) == 1
    fig.draw_without_rendering()  # runs the constrained layout
    legend_box = fig.legends[0].get_window_extent()
    assert all(not legend_box.overlaps(ax.get_window_extent()) for ax in fig.axes)


def test_no_empty_panel_and_no_strip_without_unattacked_configurations():
    no_time = [
        Option(config=o.config, costs={**o.costs, "time": None}, leakage=o.leakage) for o in OPTIONS if o.leakage
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
        scores={"ssim": {"mean": ssim, "std": 0.1, "min": ssim - 0.1, "max": ssim + 0.1}},
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


def test_options_from_a_recorded_run_take_ratios_over_steady_rounds():
    source = load_source(RUN)
    spreads = steady_round_ratios(source.records)
    options = options_for(source.rows, [summary("raw", 0.8)], spreads)
    raw, he = options[0], options[1]
    assert raw.baseline and raw.leakage.value == pytest.approx(0.8) and he.leakage is None
    assert raw.costs["cpu"].value == pytest.approx(1.0)
    assert he.costs["bytes"].lo <= he.costs["bytes"].value <= he.costs["bytes"].hi
    assert he.costs["bytes"].value > 1  # ciphertexts are larger than the plain update
