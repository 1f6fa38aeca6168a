"""Whether a protection defended against the attack that ran: its images recovered against raw's, on evidence.

"Defended" is a claim about rates: the protection's share of images recovered (SSIM at or
above the success threshold) is clearly below raw's, by Newcombe's 95 % interval on the two
Wilson intervals. Recovering any image is "not defended", a fact; when neither holds the
verdict says how many more attacked images would decide it (if the rates held). An adversary whose rule (a
red-team test) gives it a victim's update in the clear is never "defended" because an attack failed on it: that
failure is the attack's limit (quantisation, HE noise), and the verdict says "not shown" instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hebench.analysis.pareto import Interval, decide
from hebench.results.attack_views import View
from hebench.results.records import AttackSummaryRecord

HELD = ("every-update", "victim-update")  # what an adversary obtains that no failed attack can call defended
ATTACK_NAMES = {"dlg": "DLG", "idlg": "iDLG", "inverting-gradients": "Inverting Gradients"}


@dataclass(frozen=True)
class Defence:
    verdict: str  # defended, partly defended, not defended, not enough evidence, not shown, unknown
    text: str

    @property
    def defended(self) -> bool:
        return self.verdict == "defended"


def attack_name(a: AttackSummaryRecord) -> str:
    return ATTACK_NAMES.get(a.attack, a.attack)


def _rate(a: AttackSummaryRecord) -> Interval | None:
    s = a.scores.get("success")
    return Interval.rate(int(s["k"]), int(s["n"])) if s and s.get("n") else None


def raw_attack(
    attacks: Sequence[AttackSummaryRecord], like: AttackSummaryRecord | None = None
) -> AttackSummaryRecord | None:
    """The attack on the unprotected view (the same attack as ``like`` when there is one)."""
    raws = [a for a in attacks if not a.dry_run and (a.view == View.RAW or (a.ratio == 0 and a.mask))]
    same = [a for a in raws if like is None or a.attack == like.attack]
    return (same or raws or [None])[0]


def defence(a: AttackSummaryRecord, raw: AttackSummaryRecord | None) -> Defence:
    """``a``'s verdict against raw's images recovered."""
    return rate_defence(_rate(a), _rate(raw) if raw else None)


def rate_defence(
    mine: Interval | None, base: Interval | None, counted: str = "images recovered", none: str = "no image"
) -> Defence:
    """A protection's rate (k of n ``counted``) against raw's: defended where clearly lower (Newcombe 95 % on the
    Wilson intervals), not defended where it recovers some and is not clearly lower, else what would decide it.
    ``none``: nothing recovered, in words (``no image``, ``no sequence exactly``)."""
    if mine is None:
        return Defence("unknown", f"{counted} not recorded")
    assert mine.k is not None
    got = f"{mine.k} of {mine.n} {counted} ({100 * mine.lo:.0f}–{100 * mine.hi:.0f} %)"
    if base is None or base.k is None:
        return Defence("not defended" if mine.k else "unknown", f"{got}; raw was not attacked, so no defence is shown")
    against = f"raw {base.k} of {base.n}"
    if base.k == 0:
        return Defence(
            "not defended" if mine.k else "not enough evidence",
            f"{got}; the attack recovered {none} from raw ({base.n} tried), so it cannot show a defence",
        )
    d = decide(base, mine)  # 1: raw recovers clearly more
    if d.sign == 1:
        if mine.k == 0:
            return Defence("defended", f"{got} against {against} (Newcombe 95 %)")
        return Defence("partly defended", f"{got}, clearly fewer than {against} (Newcombe 95 %)")
    if mine.k:
        extra = f"; {d.needs()} each would decide whether it recovers fewer" if d.needs() else ""
        return Defence("not defended", f"{got}, not clearly fewer than {against}{extra}")
    extra = f": {d.needs()} each would decide it (if the rates held)" if d.needs() else ""
    return Defence("not enough evidence", f"{got} against {against}, not clearly fewer at 95 %{extra}")


def held_by_rule(d: Defence, obtains: str | None, evidence: str | None, failure: str = "") -> Defence:
    """``d``, unless the adversary's rule gives it a victim's update (``obtains`` in :data:`HELD`, shown by the
    red-team test ``evidence``) and ``d`` would credit the protection: then "not shown", as the attack's failure
    (``failure``: its reason) is a limit of the attack on an update the adversary holds, not a defence."""
    if obtains not in HELD or d.verdict not in ("defended", "partly defended", "not enough evidence"):
        return d
    cause = f" ({failure})" if failure else ""
    test = (evidence or "its rule").rsplit("::", 1)[-1]  # the red-team test's name (its file: the evidence lines)
    return Defence(
        "not shown",
        f"{d.text}; yet this adversary obtains {obtains} ({test}): the attack's failure{cause} "
        "is its own limit on an update the adversary holds, not a defence",
    )
