"""The modelled TEE row: published linear model over measured costs, coefficients from a user file only."""

from __future__ import annotations

import pytest

from hebench.analysis.tee_model import load_coefficients, modelled_costs
from hebench.errors import ParameterError
from hebench.results.fields import Phase, Phases
from hebench.results.records import PartyRoundRecord


def _round(role: str, r: int, wall: float | None, cpu: float) -> PartyRoundRecord:
    phases = Phases({"train": Phase(wall_s=cpu, cpu_s=cpu), "wait": Phase(wall_s=5.0, cpu_s=0.5)})
    return PartyRoundRecord(config="raw/tee-modelled", role=role, round=r, round_wall_s=wall, phases=phases)


def test_modelled_costs_scale_the_measured_baseline_by_one_plus_the_coefficients(tmp_path):
    file = tmp_path / "c.yaml"
    file.write_text("source: a paper, Table 3\nfitted_on: resnet18\nmechanisms: {tee: 0.25, tls: 0.05, disk: 0.5}\n")
    measured = [_round("aggregator", r, 2.0, 0.1) for r in range(3)] + [
        _round("client", r, None, 1.0) for r in range(3)
    ]
    record = modelled_costs("raw/tee-modelled", measured, load_coefficients(file), ("tee", "tls"), str(file))
    assert record.modelled is True and record.source == "a paper, Table 3"
    assert record.baseline_round_wall_s == pytest.approx(6.0)
    assert record.modelled_round_wall_s == pytest.approx(6.0 * 1.30)
    assert record.overhead_wall_s == pytest.approx({"tee": 1.5, "tls": 0.3})
    assert record.baseline_cpu_s == pytest.approx(3 * 0.1 + 3 * 1.0)  # waiting is not work
    assert record.modelled_cpu_s == pytest.approx(3.3 * 1.30)
    assert record.coefficients == {"tee": 0.25, "tls": 0.05}


def test_a_mechanism_without_a_coefficient_is_an_error_not_a_guess(tmp_path):
    file = tmp_path / "c.yaml"
    file.write_text("source: s\nmechanisms: {tdx: 0.1}\n")
    with pytest.raises(ParameterError, match="no coefficient for sgx"):
        modelled_costs("x", [], load_coefficients(file), ("sgx",), str(file))


@pytest.mark.parametrize(
    "text", ["mechanisms: {tdx: 0.1}\n", "source: s\nmechanisms: {tdx: -1}\n", "source: s\nmechanisms: [tdx]\n"]
)
def test_a_bad_coefficients_file_names_the_problem(tmp_path, text):
    file = tmp_path / "c.yaml"
    file.write_text(text)
    with pytest.raises(ParameterError, match=r"c\.yaml"):
        load_coefficients(file)
