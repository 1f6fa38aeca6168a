"""A VIFp above 1 is shown as recorded, marked, and explained (#40: failed secagg reconstructions at SSIM 0.03–0.07
scored 2.93, 2.06, 2.64, unexplained)."""

from __future__ import annotations

from dataclasses import replace

from hebench.analysis.score_notes import MARK, vifp_above_one, vifp_note
from tests.analysis.test_defended import attacked


def scored(plan: str, ssim: float, vifp: float):
    a = attacked(plan, 0, 4)
    return replace(a, scores={**a.scores, "ssim": {"mean": ssim, "std": 0.01}, "vifp": {"mean": vifp, "std": 0.3}})


def test_a_noise_reconstruction_above_one_is_read_as_no_fidelity():
    attacks = [scored("secagg", 0.03, 2.93), scored("secagg/b4", 0.07, 2.06), scored("host-he", 0.02, 0.04)]
    assert [vifp_above_one(a) for a in attacks] == [True, True, False]
    (note,) = vifp_note(attacks)
    assert note.startswith(f"{MARK} VIFp above 1 (secagg 2.93, secagg/b4 2.06) at SSIM 0.03–0.07")
    assert "not bounded by 1" in note and "no fidelity" in note and "8-bit" in note and "host-he" not in note


def test_a_good_reconstruction_above_one_is_read_as_more_contrast_and_none_is_silent():
    (note,) = vifp_note([scored("raw", 0.9, 1.2)])
    assert "more local contrast" in note and "no fidelity" not in note
    assert vifp_note([scored("raw", 0.9, 0.8)]) == []
