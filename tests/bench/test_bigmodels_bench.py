"""The big-models benchmark's pieces: valid suites per point, goals judged against the same model's raw client,
per-parameter fits; and `hebench tune`'s clip proposal."""

from __future__ import annotations

import pytest

from hebench.bench.bigmodels import AGGREGATOR_SLACK, FITTED, POINTS, fits, point_suite, within_goals
from hebench.config import parse_suite
from hebench.heops.tune import propose_clip


@pytest.mark.parametrize("point", POINTS, ids=[p.model for p in POINTS])
def test_every_point_is_a_valid_suite_with_a_process_per_client(point):
    suite = parse_suite(point_suite(point, point.modes))
    assert suite.runtime.hosting == "process" and suite.data.clients == point.clients
    compact = [c for c in suite.configurations if c.adapter == "seal-bfv"]
    assert all(c.params["max_summands"] == point.clients for c in compact)  # pre-weights: the clients only
    assert [c.mode for c in suite.configurations if c.name == "secagg"] == ["secagg"]  # every point has a secagg row


def test_secagg_gets_its_own_fitted_per_parameter_costs():
    rows = [
        {"mode": mode, "completes": True, "parameters": n, **{key: 5.0 + 4.0 * n for key in FITTED}}
        for n in (10**6, 10**7)
        for mode in ("raw", "secagg")
    ]
    assert fits(rows)["secagg"]["upload_bytes_per_client"]["per_parameter"] == pytest.approx(4.0)


def test_goals_compare_with_the_raw_client_and_one_update_plus_slack():
    def row(mode: str, client: int, aggregator: int, upload: int) -> dict:
        return {
            "model": "m",
            "mode": mode,
            "client_peak_rss_bytes": client,
            "aggregator_peak_rss_bytes": aggregator,
            "upload_bytes_per_client": upload,
        }

    rows = [row("raw", 100, 50, 40), row("ckks", 160, 2000 + AGGREGATOR_SLACK, 2000)]
    rows.append(row("compact-16", 140, 3000 + AGGREGATOR_SLACK, 2999))
    within_goals(rows)
    ckks, compact = rows[1], rows[2]
    assert ckks["client_rss_vs_raw"] == pytest.approx(1.6) and not ckks["client_within_goal"]
    assert ckks["aggregator_within_goal"] and not compact["aggregator_within_goal"] and compact["client_within_goal"]


def test_fits_recover_a_per_parameter_line():
    rows = [
        {"mode": "raw", "completes": True, "parameters": n, **{key: 3.0 + 4.0 * n for key in FITTED}}
        for n in (10**6, 10**7, 10**8)
    ]
    line = fits(rows)["raw"]["upload_bytes_per_client"]
    assert line["per_parameter"] == pytest.approx(4.0) and line["intercept"] == pytest.approx(3.0, abs=1e-3)


def test_tune_proposes_a_clip_with_room_for_the_initial_weights_to_double():
    resnet = propose_clip("resnet18")
    assert (resnet.clip, resnet.max_abs, resnet.tensor) == (2.0, 1.0, "bn1.weight")  # BatchNorm weights start at 1
    cnn = propose_clip("cnn_dropout")
    assert cnn.clip >= 2 * cnn.max_abs > cnn.clip / 2
