"""The secagg_active study measures both variants of secagg on the same round and reports active / honest-but-curious
per figure (no timing is checked here: the study measures, this test checks what it measures)."""

from __future__ import annotations

from hebench.bench.secagg_active import FIGURES, VARIANTS, secagg_active


def test_the_study_runs_both_variants_on_the_same_rounds_and_reports_their_ratio():
    result = secagg_active(clients=(8,), rates=(0.0, 0.2), values=64, repeats=1)
    assert [(p["clients"], p["dropout"]) for p in result["points"]] == [(8, 0.0), (8, 0.2)]
    assert set(result["load_average"]) == {"before", "after", "cpus"}
    for point in result["points"]:
        hbc, active = (point[v] for v in VARIANTS)
        assert "failed" not in hbc and "failed" not in active
        assert hbc["dropped"] == active["dropped"]  # the same dropped clients
        assert "consistency" in active["phases"] and "consistency" not in hbc["phases"]
        ratios = point["active_over_honest_but_curious"]
        assert set(ratios) == set(FIGURES) and all(r is not None and r > 0 for r in ratios.values())
        # the signed member list, the signatures and the consistency round's messages: more bytes, per client
        assert point["active_extra"]["client_bytes"] > 0 and point["active_extra"]["aggregator_bytes"] > 0
