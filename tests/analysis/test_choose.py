"""'What to choose': a Pareto set only on evidence (Welch for costs, Wilson/Newcombe for images recovered);
too little evidence says so and what would decide it; unstable figures are left out of the ranking."""

from __future__ import annotations

import json
from pathlib import Path

from hebench.analysis.choose import choose, choose_library, decide_set
from hebench.analysis.options import Option
from hebench.analysis.pareto import Interval, compare, decide, pareto_set
from hebench.report.load import load_source

LIBS = Path(__file__).resolve().parents[1] / "fixtures" / "libraries" / "compare.jsonl"


def rounds(v: float, spread: float = 0.02, n: int = 6) -> Interval:
    """``n`` per-round values alternating ±``spread`` (relative) around ``v``."""
    return Interval.of([v * (1 + spread * (-1) ** i) for i in range(n)])


def option(name: str, cpu: Interval, bytes_: Interval, recovered: tuple[int, int] | None = None, **kw) -> Option:
    rate = Interval.rate(*recovered) if recovered else None
    leak = Interval(0.5, 0.4, 0.6, sd=0.1, n=recovered[1]) if recovered else None
    return Option(config=name, costs={"cpu": cpu, "bytes": bytes_}, leakage=leak, recovered=rate, **kw)


def test_the_pareto_set_keeps_every_trade_off_and_drops_the_dominated():
    options = [
        option("raw", rounds(1), rounds(1), (9, 10), baseline=True),
        option("paillier", rounds(611), rounds(2.8), (0, 10)),
        option("ckks", rounds(7), rounds(25), (0, 10)),
        option("bfv", rounds(9), rounds(30), (0, 10)),  # worse than ckks on cpu and bytes, same leakage
    ]
    lines = choose(options)
    assert lines[0].startswith("Reference, unprotected (not a choice): raw:")  # raw is the 1× reference
    assert lines[1].startswith("Evidence: costs by Welch's 95 % interval") and "(6 steady round(s) each)" in lines[1]
    start = next(i for i, line in enumerate(lines) if line.startswith("Pareto set"))
    assert [line.split(":")[0] for line in lines[start + 1 : start + 3]] == ["paillier", "ckks"]
    assert any(line.startswith("Dominated") and "bfv (by ckks)" in line for line in lines)
    assert "paillier: 611× host CPU, 2.8× upload, SSIM 0.50 ± 0.10, 0/10 recovered (0–28 %)" in lines[start + 1]


def test_one_steady_round_decides_nothing_and_says_what_would():
    one = {"raw": 1.0, "ckks": 7.0, "bfv": 9.0}
    options = [
        option(n, Interval.of([v]), Interval.of([v * 3]), baseline=n == "raw") for n, v in one.items()
    ]  # as --set training.rounds=2: one steady round, no spread
    assert decide(options[1].costs["cpu"], options[2].costs["cpu"]).status == "too few"
    lines = choose(options)
    assert not any(line.startswith(("Pareto set", "Dominated")) for line in lines), lines
    assert any(line.startswith("Not enough evidence for a Pareto set") for line in lines)
    assert any(
        "Not enough evidence whether bfv is dominated: by ckks" in line and "at least 1 more round" in line
        for line in lines
    ), lines


def test_a_difference_inside_the_noise_is_not_a_verdict_and_the_rounds_needed_are_named():
    options = [
        option("raw", rounds(1), rounds(1), baseline=True),
        option("a", rounds(7.0, 0.2, 3), rounds(80.9, 0.0, 3)),
        option("b", rounds(7.6, 0.2, 3), rounds(80.9, 0.0, 3)),  # same bytes, CPU within the noise
    ]
    choice = decide_set(options)
    assert not choice.decided and choice.members == ["a", "b"]
    needs = choice.pending["b"][0][1]
    assert needs[0][0] == "cpu" and needs[0][1].status == "undecided" and needs[0][1].more > 0
    lines = choose(options)
    assert any(line.startswith("Not enough evidence whether b is dominated: by a (host CPU: ") for line in lines)


def test_an_unclear_difference_against_an_option_keeps_it_in_the_set():
    options = [
        option("raw", rounds(1), rounds(1), (5, 10), baseline=True),
        option("compact", rounds(2.45, 0.1, 2), rounds(1.9), (0, 10)),
        option("selective", rounds(1.8, 0.1, 2), rounds(7.4), (4, 10)),  # cheaper CPU, but not clearly
    ]
    # compact is clearly better on bytes and leakage, but its CPU only looks worse: no verdict "dominated"
    assert compare(options[1].costs["cpu"], options[2].costs["cpu"]) == 0
    assert decide_set(options).members == ["compact", "selective"]


def test_only_full_encryption_defended_does_not_rest_on_two_images():
    options = [
        option("raw", rounds(1), rounds(1), (1, 2), baseline=True),
        option("he", rounds(5), rounds(26), (0, 2)),
        option("selective", rounds(2), rounds(7.4), (1, 2)),
    ]
    he, sel = options[1].recovered, options[2].recovered
    d = decide(he, sel)
    assert d.sign == 0 and d.status == "undecided" and d.needs() == "4 more images"


def test_an_unstable_figure_is_left_out_of_the_ranking_not_tied_with_anything():
    noisy = Interval.of([1.0, 9.0])  # range 8 over mean 5: unstable
    assert noisy.unstable and compare(noisy, rounds(100)) is None
    options = [option("a", noisy, rounds(2)), option("b", rounds(100), rounds(2.5))]
    # b is clearly worse on bytes, and a's CPU cannot be ranked: b cannot dominate a, nor a b through CPU
    assert pareto_set({o.name: o.measures for o in options}, ("cpu", "bytes")) == ["a", "b"]
    lines = choose(options)
    assert any(line.startswith("Left out of the ranking, too noisy") and "a (host CPU)" in line for line in lines)


def test_contended_round_times_are_shown_but_not_ranked():
    def timed(name: str, t: float, **kw) -> Option:
        return Option(config=name, costs={"cpu": rounds(2), "time": rounds(t)}, contended=True, **kw)

    options = [timed("raw", 1.0, baseline=True), timed("fast", 1.5), timed("slow", 9.0)]
    choice = decide_set(options)
    assert "time" not in choice.measures and "contention" in choice.unranked["time"]
    assert choice.members == ["fast", "slow"]  # the round time no longer decides
    assert any(line.startswith("Not ranked on round time") for line in choose(options))


def test_modelled_rows_are_listed_apart_and_never_in_the_set():
    options = [
        option("raw", rounds(1), rounds(1), (9, 10), baseline=True),
        option("ckks", rounds(7), rounds(25), (0, 10)),
        option("tee", rounds(0.5), rounds(0.5), (0, 10), modelled=True),  # would dominate everything if mixed in
    ]
    lines = choose(options)
    assert any(line.endswith("(1 of 1):") for line in lines)
    assert any(line.startswith("Modelled, not measured") and "tee:" in line for line in lines)


def _unstable_libraries() -> list[dict]:
    """The fixture's records, as a busy host measures them: every fast adapter's encryption flagged unstable."""
    libs = [json.loads(line)["result"] for line in LIBS.read_text().splitlines() if '"library_benchmark"' in line]
    for lib in libs:
        if lib["adapter"] != "paillier":
            lib["operations"]["encrypt"]["wall_s"]["unstable"] = True
    return libs


def test_library_advice_never_recommends_paillier_alone_beside_unstable_fast_adapters():
    libs = _unstable_libraries()
    first = choose_library(libs, 4096)[0]
    assert "tenseal-ckks" in first and "pyfhel-bfv" in first and "paillier" in first  # not "paillier" alone
    assert "(unstable: not ranked on it)" in first
    assert any(line.startswith("Left out of the ranking on encryption time") for line in choose_library(libs, 4096))


def test_library_advice_ranks_stable_figures_by_welch_and_says_how_much_slower():
    libs = load_source(LIBS).libraries
    lines = choose_library(libs, 4096)
    assert "Welch's 95 % interval over 4–5 repeats" in lines[0]
    assert "paillier: 201 µs/value encrypt (248× pyfhel-bfv), 11.5 B/value" in lines[0]


def test_a_member_only_for_want_of_evidence_is_named_apart_and_not_what_to_choose():
    # #40: a two-run report ringed a 25.9×-upload CKKS point as "what to choose": one round, no spread, so nothing
    # could be shown to dominate it, though a steady run's secagg was lower on every cost
    fixtures = LIBS.parents[1]
    sources = [load_source(fixtures / name) for name in ("run-dropouts", "run-one-round")]
    from hebench.report.build import run_options

    options = [o for s in sources for o in run_options(s, run=s.label)]
    choice = decide_set(options)
    ckks = "run-one-round: host-he/tenseal-ckks"
    assert ckks in choice.members and ckks in choice.pending and ckks not in choice.settled
    assert choice.settled == ["run-dropouts: secagg@30", "run-one-round: host-he/compact-bfv-16"]
    lines = choose(options)
    start = next(i for i, line in enumerate(lines) if line.startswith("Pareto set"))
    assert lines[start].endswith("(2 of 4):")
    apart = lines.index("Not dominated only for want of evidence (not in the set, not ringed):")
    assert lines[apart + 1].startswith(f"{ckks}: 5.77× host CPU, 25.9× upload")
    from hebench.report.leakage_chart import members

    assert members(options) == set(choice.settled)  # the chart rings what the text recommends, nothing more
