"""Figure behaviour on the matplotlib objects: log scales, legends off the data, no empty panels, readable rounds."""

from __future__ import annotations

from matplotlib.figure import Figure

from hebench.analysis.summary import SummaryRow
from hebench.report import figures as F
from hebench.results.records import RoundRecord


def row(config: str, mode: str, train: float, encrypt: float, **fields) -> SummaryRow:
    return SummaryRow(
        config=config,
        mode=mode,
        runtime="hebench",
        adapter="plain" if mode == "raw" else "x",
        packing="flat",
        params={},
        selective=None,
        parameters=100,
        rounds_done=2,
        client_wall_s={"train": train, "encrypt": encrypt},
        aggregator_wall_s={"aggregate": 0.001},
        **fields,
    )


def drawn(draw) -> Figure:
    fig = Figure(figsize=(9, 4), layout="constrained")
    draw(fig)
    fig.draw_without_rendering()
    return fig


def legend_off_the_axes(fig: Figure) -> bool:
    box = fig.legends[0].get_window_extent()
    return all(not box.overlaps(ax.get_window_extent()) for ax in fig.axes)


def test_phase_times_spanning_orders_of_magnitude_are_drawn_on_a_log_axis_with_every_row_visible():
    rows = [row("raw", "raw", 0.1, 0.0), row("ckks", "host-he", 0.1, 0.05), row("paillier", "host-he", 0.1, 16.0)]
    fig = drawn(F.phase_bars(rows))
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and legend_off_the_axes(fig)
    totals = [patch.get_width() for patch in ax.patches]
    assert len(totals) == 3 and min(totals) > 0  # raw is a visible bar beside Paillier


def test_comparable_phase_times_stay_stacked_on_a_linear_axis():
    fig = drawn(F.phase_bars([row("raw", "raw", 0.1, 0.0), row("ckks", "host-he", 0.1, 0.05)]))
    assert fig.axes[0].get_xscale() == "linear"


def test_a_panel_no_configuration_has_is_left_out():
    rows = [
        row("raw", "raw", 0.1, 0.0, client_cpu_s_per_round=0.01, upload_bytes_per_client_round=5e4),
        row("he", "host-he", 0.1, 0.1, client_cpu_s_per_round=0.02, upload_bytes_per_client_round=1.3e6),
    ]
    items = [
        ("client_cpu_s_per_round", "host CPU (s)", 1.0),
        ("engine_cpu_s_per_round", "engine CPU (s)", 1.0),  # no engines here
        ("upload_bytes_per_client_round", "upload (MB)", 1e-6),
    ]
    fig = drawn(F.paired_bars(rows, items))
    assert [ax.get_title() for ax in fig.axes] == ["host CPU (s)", "upload (MB), log"]
    assert fig.axes[1].get_xscale() == "log"
    assert all(t.get_fontsize() >= F.LABEL_SIZE for ax in fig.axes for t in ax.get_yticklabels() + ax.get_xticklabels())


def rounds(config: str, values: list[float], key: str = "loss") -> list[RoundRecord]:
    return [RoundRecord(config=config, round=i, **{key: v}) for i, v in enumerate(values)]


def test_curves_have_integer_round_ticks_no_offset_and_name_coinciding_lines():
    records = rounds("raw", [0.5, 0.4, 0.3]) + rounds("ckks", [0.5, 0.4 + 1e-7, 0.3]) + rounds("bfv", [0.6, 0.5, 0.45])
    assert F.coinciding(records, "loss") == [["raw", "ckks"]]
    fig = drawn(F.curves(records, "loss", "test loss"))
    ax = fig.axes[0]
    assert all(float(t).is_integer() for t in ax.get_xticks())
    assert not ax.yaxis.get_major_formatter().get_useOffset()
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels == ["raw = ckks (coincide)", "bfv"] and legend_off_the_axes(fig)
    assert "raw and ckks coincide" in F.coincide_note(F.coinciding(records, "loss"))


def test_a_tiny_difference_is_not_stretched_to_full_height():
    records = rounds("raw", [1.0, 1.0 + 1e-7]) + rounds("ckks", [1.0, 1.0 - 1e-7])
    fig = drawn(F.curves(records, "loss", "test loss"))
    lo, hi = fig.axes[0].get_ylim()
    assert hi - lo >= F.MIN_RELATIVE_RANGE * 1.0  # the axis spans at least 2 % of the values, not 2e-7


def test_distinct_error_curves_on_a_log_axis_do_not_coincide():
    records = rounds("raw", [1.5e-8, 1.5e-8], "max_abs_error") + rounds("ckks", [4.5e-8, 6e-8], "max_abs_error")
    assert F.coinciding(records, "max_abs_error", log=True) == []
