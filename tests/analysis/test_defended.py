"""'Defended' only on evidence: images recovered clearly below raw's (Newcombe on Wilson intervals); recovering
any image is 'not defended'; two images decide nothing and the images that would are named."""

from __future__ import annotations

from hebench.analysis.advice import defence_lines, privacy_advice
from hebench.analysis.defended import defence
from hebench.results.records import AttackSummaryRecord


def attacked(plan: str, k: int, n: int, ratio: float = 1.0, view: str = "he", mask: str | None = None):
    ssim = 0.8 if k else 0.02
    return AttackSummaryRecord(
        plan=plan,
        attack="idlg",
        view=view,
        mask=mask,
        ratio=ratio,
        model="mlp",
        batch_size=1,
        images=n,
        seeds=1,
        restarts=1,
        dataset="digits",
        threat="gradient",
        attacker="mask-aware" if mask else None,
        mask_source="local" if mask else None,
        scores={
            "n": n,
            "ssim": {"mean": ssim, "std": 0.1, "min": ssim - 0.1, "max": ssim + 0.1},
            "success": {"k": k, "n": n, "threshold": 0.6},
        },
    )


def test_verdicts_follow_the_evidence():
    raw = attacked("raw", 6, 10, 0.0, "raw")
    assert defence(attacked("he", 0, 10), raw).verdict == "defended"
    assert defence(attacked("sel", 3, 10, 0.1, "selective", "sensitivity"), raw).verdict == "not defended"
    assert defence(attacked("sel", 1, 10, 0.5, "selective", "sensitivity"), raw).verdict == "partly defended"
    thin = defence(attacked("he", 0, 2), attacked("raw", 1, 2, 0.0, "raw"))
    assert thin.verdict == "not enough evidence" and "4 more images each would decide it" in thin.text
    blind = defence(attacked("he", 0, 10), attacked("raw", 0, 10, 0.0, "raw"))
    assert blind.verdict == "not enough evidence" and "cannot show a defence" in blind.text


def quickstart(n: int, raw_k: int, sel_k: int) -> list[AttackSummaryRecord]:
    return [
        attacked("raw", raw_k, n, 0.0, "raw"),
        attacked("host-he/tenseal-ckks", 0, n),
        attacked("host-he/tenseal-ckks/sel-sensitivity-0.1", sel_k, n, 0.1, "selective", "sensitivity"),
    ]


def test_only_full_encryption_defended_is_not_said_on_two_images():
    text = " ".join(privacy_advice(quickstart(2, 1, 1)))
    assert "only full encryption defended" not in text
    assert "p = 1 (full HE): not enough evidence" in text and "4 more images each" in text


def test_only_full_encryption_defended_is_said_when_the_images_show_it():
    text = " ".join(privacy_advice(quickstart(12, 7, 6)))
    assert "p = 0.1: not defended" in text and "p = 1 (full HE): defended" in text
    assert "only full encryption defended" in text


def test_defence_lines_group_configurations_with_the_same_evidence():
    attacks = [*quickstart(2, 1, 1), attacked("offload/tenseal-ckks", 0, 2)]
    (line,) = defence_lines(attacks)
    assert line.startswith("Against iDLG") and "host-he/tenseal-ckks, offload/tenseal-ckks (each 0 of 2" in line
    assert "defended:" not in line.replace("not defended", "")


def test_an_adversary_that_holds_the_update_is_never_called_defended_because_an_attack_failed():
    from hebench.analysis.defended import Defence, held_by_rule

    credited = Defence("defended", "0 of 8 against raw 8 of 8")
    test = "tests/protections/sharing/test_red_team.py::test_all_holders"
    for obtains in ("every-update", "victim-update"):
        d = held_by_rule(credited, obtains, test, "failed: span-full")
        assert d.verdict == "not shown" and "obtains " + obtains + " (test_all_holders)" in d.text
        assert "failed: span-full" in d.text and d.text.startswith(credited.text)
    assert held_by_rule(credited, "sum", test) == credited  # a sum or nothing: the failure is the protection's
    assert held_by_rule(credited, None, None) == credited
    recovered = Defence("not defended", "8 of 8")
    assert held_by_rule(recovered, "every-update", test) == recovered  # recovering is a fact either way
