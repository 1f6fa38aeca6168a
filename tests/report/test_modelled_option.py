"""A modelled TEE row reaches the chart at its modelled costs, marked modelled, never as a measured point."""

from __future__ import annotations

import pytest

from hebench.analysis.options import options_for
from hebench.results.records import ModelledCostRecord
from tests.report.rows import row


def _model(config: str) -> ModelledCostRecord:
    return ModelledCostRecord(
        config=config,
        model="linear",
        source="a paper",
        fitted_on="resnet18",
        coefficients_file="c.yaml",
        coefficients={"tdx": 0.5},
        rounds=3,
        baseline_round_wall_s=2.0,
        modelled_round_wall_s=3.0,
        overhead_wall_s={"tdx": 1.0},
        baseline_cpu_s=1.0,
        modelled_cpu_s=1.25,
    )


def test_a_modelled_row_takes_the_models_factors_and_is_marked():
    common = {"cpu_overhead_vs_raw": 1.0, "bytes_overhead_vs_raw": 1.0, "round_time_vs_raw": 1.0, "accuracy": 0.9}
    rows = [row("raw", "raw", "plain", **common), row("raw/tee-modelled", "raw", "plain", **common)]
    options = {o.config: o for o in options_for(rows, modelled={"raw/tee-modelled": _model("raw/tee-modelled")})}
    tee, raw = options["raw/tee-modelled"], options["raw"]
    assert tee.modelled and not raw.modelled
    assert tee.costs["cpu"].value == pytest.approx(1.25) and tee.costs["time"].value == pytest.approx(1.5)
    assert tee.costs["bytes"].value == pytest.approx(1.0)  # the model says nothing about bytes
    assert raw.costs["time"].value == pytest.approx(1.0)
