"""The overhead model: shown only when checked (degrees of freedom, R², every configuration predicted within
MAX_MISS), residuals always given; savings; costs only from mechanisms that change them."""

from __future__ import annotations

from dataclasses import replace

import pytest

from hebench.analysis.model_fit import MAX_MISS, MIN_DOF, POOR_FIT, fit
from tests.report.rows import row


def test_as_many_coefficients_as_configurations_gives_a_note_not_a_number():
    rows = [
        row("raw", "raw", "plain", round_wall_s=1.0),
        row("a", "host-he", "a", round_wall_s=4.0),
        row("b", "host-he", "b", round_wall_s=9.0),
        row("c", "offload", "a", round_wall_s=5.0),
    ]
    model = fit(rows, "round_wall_s")  # 3 coefficients (a, b, offload) from 3 configurations
    assert model.dof == 0 and model.coefficients is None and model.r2 is None
    assert "degrees of freedom" in model.note


def test_mechanisms_that_never_vary_apart_give_a_note():
    rows = [
        row("raw", "raw", "plain", round_wall_s=1.0),
        row("a", "offload", round_wall_s=4.0),
        row("b", "offload", round_wall_s=4.2),
    ]
    model = fit(rows, "round_wall_s")  # encrypt and offload always together
    assert model.dof == 0 and model.coefficients is None and "degrees of freedom" in model.note
    rows.append(row("c", "offload", round_wall_s=4.1))
    model = fit(rows, "round_wall_s")  # one degree of freedom, but still never apart
    assert model.dof == 1 and model.coefficients is None and "apart" in model.note


def test_offload_gets_no_upload_bytes_and_its_cpu_saving_is_a_negative_coefficient():
    half = {"mask": "random", "ratio": 0.5}
    rows = [
        row("raw", "raw", "plain", client_cpu_s_per_round=1.0, upload_bytes_per_client_round=100.0),
        row("he", "host-he", client_cpu_s_per_round=5.0, upload_bytes_per_client_round=2500.0),
        replace(
            row("he-half", "host-he", client_cpu_s_per_round=3.0, upload_bytes_per_client_round=1300.0), selective=half
        ),
        row("nic", "offload", client_cpu_s_per_round=1.5, upload_bytes_per_client_round=2500.0),
        row("nic-2", "offload", client_cpu_s_per_round=1.5, upload_bytes_per_client_round=2500.0),
    ]
    upload = fit(rows, "upload_bytes_per_client_round")
    assert "offload engine" not in upload.mechanisms and upload.dof == 3
    assert upload.coefficients["HE encrypt (x) × encrypted fraction"] == pytest.approx(24.0)
    cpu = fit(rows, "client_cpu_s_per_round")
    assert cpu.dof == MIN_DOF and cpu.shown
    assert cpu.coefficients["offload engine"] == pytest.approx(-3.5)  # 1 + 4 - 3.5 = 1.5× raw: a saving
    assert cpu.predicted["nic"] == pytest.approx((1.5, 1.5))


def test_a_poor_fit_is_not_shown():
    rows = [
        row("raw", "raw", "plain", round_wall_s=1.0),
        row("a", "host-he", round_wall_s=2.0),
        row("b", "host-he", round_wall_s=9.0),
        row("c", "host-he", round_wall_s=3.0),
    ]
    model = fit(rows, "round_wall_s")  # one mechanism, three very different costs
    assert model.coefficients is None and model.r2 < POOR_FIT
    assert "poor fit" in model.note and set(model.predicted) == {"a", "b", "c"}


def test_selective_encryption_that_is_not_linear_in_the_fraction_gives_no_model_and_says_where():
    """The quickstart's upload bytes: 10 % selective costs 7.38× raw, not the 3.5× a straight line predicts."""
    tenth = {"mask": "sensitivity", "ratio": 0.1}
    rows = [
        row("raw", "raw", "plain", upload_bytes_per_client_round=51.2e3),
        row("ckks", "host-he", "tenseal-ckks", upload_bytes_per_client_round=51.2e3 * 25.9),
        row("bfv", "host-he", "seal-bfv", upload_bytes_per_client_round=51.2e3 * 1.91),
        row("nic", "offload", "tenseal-ckks", upload_bytes_per_client_round=51.2e3 * 25.9),
        replace(row("sel", "host-he", "tenseal-ckks", upload_bytes_per_client_round=51.2e3 * 7.38), selective=tenth),
    ]
    model = fit(rows, "upload_bytes_per_client_round")
    assert model.dof == 2 and model.r2 > 0.9  # a high R², yet
    assert not model.shown and "sel" in model.note and "7.38×" in model.note
    measured, predicted = model.predicted["sel"]
    assert measured == pytest.approx(7.38) and abs(predicted - measured) / measured > MAX_MISS


def test_one_degree_of_freedom_is_too_few_to_show_a_model():
    rows = [
        row("raw", "raw", "plain", round_wall_s=1.0),
        row("a", "host-he", "a", round_wall_s=4.0),
        row("b", "host-he", "a", round_wall_s=4.1),
    ]
    model = fit(rows, "round_wall_s")
    assert model.dof == 1 and not model.shown and "too few to check" in model.note
