"""'What to choose': the Pareto set, each option's costs in one line; ties called ties; unstable figures never win."""

from __future__ import annotations

from hebench.report.choose import choose, choose_library
from hebench.report.options import Option
from hebench.report.pareto import Interval, compare, pareto_set


def option(name: str, cpu: Interval, bytes_: Interval, leak: Interval | None = None, **kw) -> Option:
    return Option(config=name, costs={"cpu": cpu, "bytes": bytes_}, leakage=leak, **kw)


def at(v: float, spread: float = 0.0) -> Interval:
    return Interval(v, v - spread, v + spread)


def test_the_pareto_set_keeps_every_trade_off_and_drops_the_dominated():
    options = [
        option("raw", at(1), at(1), at(0.9, 0.05), baseline=True),
        option("paillier", at(611, 10), at(2.8, 0.01), at(0.02, 0.01)),
        option("ckks", at(7, 0.5), at(25, 0.1), at(0.02, 0.01)),
        option("bfv", at(9, 0.5), at(30, 0.1), at(0.02, 0.01)),  # worse than ckks on cpu and bytes, same leakage
    ]
    lines = choose(options)
    assert lines[0].startswith("Reference, unprotected (not a choice): raw:")  # raw is the 1× reference
    listed = [line.split(":")[0] for line in lines[2:4]]
    assert listed == ["paillier", "ckks"]
    assert "paillier: 611× raw CPU, 2.8× raw bytes, SSIM 0.02 ± 0.01" in lines
    assert any(line.startswith("Dominated") and "bfv (by ckks)" in line for line in lines)


def test_overlapping_spreads_are_a_tie_not_a_win():
    options = [
        option("raw", at(1), at(1), baseline=True),
        option("bfv", at(8.0, 1.0), at(80.9, 0.3)),
        option("ckks", at(7.5, 1.0), at(81.0, 0.3)),
    ]
    lines = choose(options)  # no attack: the set is over protected configurations, raw is the 1× baseline
    assert "No attack ran" in lines[1]
    assert [line.split(":")[0] for line in lines[3:5]] == ["bfv", "ckks"]
    assert "Tie on upload bytes (spreads overlap): bfv and ckks." in lines
    assert "Tie on host CPU (spreads overlap): bfv and ckks." in lines
    assert not any(line.startswith("Dominated") and "bfv" in line for line in lines)


def test_an_unstable_figure_never_decides():
    noisy = Interval.of([1.0, 9.0])  # range 8 over mean 5: unstable
    assert noisy.unstable and compare(noisy, at(100)) == 0
    options = [option("a", noisy, at(2)), option("b", at(100), at(2))]
    assert pareto_set({o.name: o.measures for o in options}, ("cpu", "bytes")) == ["a", "b"]
    lines = choose(options)
    assert any("unstable" in line and line.startswith("a:") for line in lines)
    assert any(line.startswith("Unstable figures") and "a (host CPU)" in line for line in lines)


def test_modelled_rows_are_listed_apart_and_never_in_the_set():
    options = [
        option("raw", at(1), at(1), at(0.9), baseline=True),
        option("ckks", at(7), at(25), at(0.02)),
        option("tee", at(0.5), at(0.5), at(0.01), modelled=True),  # would dominate everything if mixed in
    ]
    lines = choose(options)
    assert lines[1].endswith("(1 of 1):") and lines[2].startswith("ckks:")
    assert any(line.startswith("Modelled, not measured") and "tee:" in line for line in lines)


def test_library_ciphertext_sizes_within_their_spread_are_a_tie():
    def lib(name: str, enc_us: float, fresh: float, recompressed: float) -> dict:
        stats = {"median": enc_us * 1e-6, "min": enc_us * 0.95e-6, "max": enc_us * 1.05e-6, "unstable": False}
        return {
            "adapter": name,
            "size": 4096,
            "operations": {"encrypt": {"wall_s": stats, "wall_s_per_value": enc_us * 1e-6}},
            "bytes": {"fresh_per_value": fresh, "recompressed_per_value": recompressed},
        }

    libs = [
        lib("tenseal-bfv", 2.0, 80.9, 80.6),
        lib("tenseal-ckks", 1.0, 81.0, 80.7),
        lib("paillier", 200.0, 11.5, 11.4),
    ]
    lines = choose_library(libs, 4096)
    assert "tenseal-ckks: 1 µs/value encrypt, 81.0 B/value" in lines[0] and "paillier" in lines[0]
    assert "tenseal-bfv" not in lines[0]  # slower and the same size: dominated
    libs[0] = lib("tenseal-bfv", 1.02, 80.9, 80.6)  # now as fast within the spread
    assert any(
        line.startswith("Tie on ciphertext size") and "tenseal-bfv and tenseal-ckks" in line
        for line in choose_library(libs, 4096)
    )


def test_leakage_is_compared_paired_so_a_wide_spread_over_images_does_not_make_a_leaky_row_a_tie():
    options = [
        option("raw", at(1), at(1), at(0.42, 0.59), baseline=True),
        option("raw/tls", at(1.1), at(1), at(0.42, 0.59)),  # the same images recovered: one of two
        option("ckks", at(5), at(26), at(0.02, 0.01)),
    ]
    lines = choose(options)
    assert [line.split(":")[0] for line in lines[2:4]] == ["raw/tls", "ckks"]  # a trade-off: both in the set
    assert "raw/tls: 1.1× raw CPU, 1× raw bytes, SSIM 0.42 ± 0.59" in lines[2]  # shown with its spread
