"""The study registry and ``python -m hebench.bench``: every study module registered, names and flags unique,
``--list``; the runner is checked with a stand-in study (no study runs here for timings)."""

from __future__ import annotations

import inspect
import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import hebench.bench as bench
from hebench.bench import registry
from hebench.bench.command import build_parser, list_lines, main, plan
from hebench.bench.suite import translate
from hebench.errors import HebenchError

# the studies `python -m hebench.bench.suite --only` knew before the registry: none may be lost
FORMER = (
    "libraries,paillier_packing,fl_round,offload_round,flower_round,flower_memory,compact_round,compact_accuracy,"
    "scale,attack_restart,attack_strength,main_command,protections_scale,startup,dp_noise,shaper_fidelity,"
    "networks,bigmodels,threat_defences,dropouts,secaggplus_flower"
).split(",")


@pytest.fixture(scope="module")
def known() -> dict[str, registry.Study]:
    assert registry.load_all() == {}  # every study module imports in the full environment
    return registry.studies()


@pytest.fixture
def scratch(monkeypatch):
    """An empty registry for stand-in studies (the real one is restored afterwards)."""
    monkeypatch.setattr(registry, "_STUDIES", {})
    monkeypatch.setattr(registry, "load_all", lambda: {})
    monkeypatch.setattr("hebench.bench.command.load_all", lambda: {})
    return registry


def test_every_module_in_bench_registers_a_study_and_helpers_live_in_support(known):
    modules = {
        f"hebench.bench.{m.name}"
        for m in pkgutil.iter_modules(bench.__path__)
        if not m.ispkg and m.name not in registry.RUNNER_MODULES
    }
    registered = {study.module for study in known.values()}
    assert modules == registered, f"no study in: {sorted(modules - registered)}"
    assert set(FORMER) <= set(known)


def test_names_and_flags_are_unique_and_each_option_sets_a_parameter_of_its_study(known):
    flags = [option.flag for study in known.values() for option in study.options]
    assert len(flags) == len(set(flags))
    for study in known.values():
        assert study.help and "\n" not in study.help
        parameters = inspect.signature(study.run).parameters
        for option in study.options:
            assert option.param in parameters, (study.name, option.param)
    build_parser(known)  # argparse refuses a flag declared twice


def test_a_second_study_with_a_taken_name_is_refused(scratch):
    @scratch.study("twin")
    def first() -> dict:
        """One."""
        return {}

    with pytest.raises(HebenchError, match="two studies are named 'twin'"):

        @scratch.study("twin")
        def second() -> dict:
            """Two."""
            return {}


def test_a_study_without_a_docstring_is_refused(scratch):
    with pytest.raises(HebenchError, match="no docstring"):

        @scratch.study("mute")
        def mute() -> dict:
            return {}


def test_list_gives_one_line_per_study(known):
    lines = list_lines(known, {})
    assert len(lines) == len(known)
    for name, line in zip(sorted(known), lines, strict=True):
        assert line.startswith(name + " ") and known[name].help in line


def test_list_runs_as_a_command_and_the_former_entry_point_still_answers():
    for module in ("hebench.bench", "hebench.bench.suite"):
        done = subprocess.run(
            [sys.executable, "-m", module, "--list"], capture_output=True, text=True, timeout=600, check=False
        )
        assert done.returncode == 0, done.stderr
        names = [line.split()[0] for line in done.stdout.splitlines()]
        assert set(FORMER) <= set(names), done.stdout


def test_the_runner_writes_each_study_with_the_environment_and_passes_its_options(scratch, tmp_path, capsys):
    seen = {}

    @scratch.study("stand_in", options=(registry.Option("--stand-in-sizes", "sizes", "sizes", registry.ints),))
    def stand_in(sizes: tuple[int, ...] = (1,)) -> dict:
        """A stand-in study."""
        seen["sizes"] = sizes
        return {"benchmark": "stand_in", "sizes": list(sizes)}

    @scratch.study("opt_in", default=False)
    def opt_in() -> dict:
        """Not in the default set."""
        raise AssertionError("ran without being named")

    main(["--out", str(tmp_path), "--stand-in-sizes", "8,32"])  # no name: the default set
    data = json.loads((tmp_path / "stand_in.json").read_text())
    assert seen["sizes"] == (8, 32) and data["sizes"] == [8, 32] and data["benchmark"] == "stand_in"
    assert {"python", "load_avg", "libraries"} <= set(data["environment"])
    assert not (tmp_path / "opt_in.json").exists()
    assert "[1/1] stand_in: wrote" in capsys.readouterr().out


def test_bad_names_and_options_end_in_one_error_and_fix(scratch, tmp_path, capsys):
    @scratch.study("stand_in", options=(registry.Option("--stand-in-sizes", "sizes", "sizes", registry.ints),))
    def stand_in(sizes: tuple[int, ...] = (1,)) -> dict:
        """A stand-in study."""
        return {}

    @scratch.study("other")
    def other() -> dict:
        """Another."""
        return {}

    cases = [
        (["stand_inn"], "no study is named 'stand_inn'", "did you mean 'stand_in'"),
        (["other", "--stand-in-sizes", "4"], "option of the study 'stand_in'", "add stand_in"),
        (["stand_in", "--stand-in-sizes", "four"], "not a list of positive integers", "8,32,128"),
    ]
    for argv, problem, fix in cases:
        with pytest.raises(SystemExit) as info:
            main([*argv, "--out", str(tmp_path)])
        err = capsys.readouterr().err
        assert info.value.code == 2 and err.startswith("error: ") and problem in err and "fix: " in err, err
        assert fix in err, err
    assert not list(tmp_path.iterdir())  # nothing ran


def test_a_study_module_that_cannot_import_is_named_not_skipped_in_silence(scratch, monkeypatch, capsys):
    broken = {"hebench.bench.needs_flwr": "No module named 'flwr'"}
    monkeypatch.setattr("hebench.bench.command.load_all", lambda: broken)

    @scratch.study("stand_in")
    def stand_in() -> dict:
        """A stand-in study."""
        return {}

    with pytest.raises(SystemExit):
        main([])  # the default set would silently lose that module's studies
    assert "hebench.bench.needs_flwr cannot be imported here (No module named 'flwr')" in capsys.readouterr().err
    main(["--list"])
    assert "cannot import hebench.bench.needs_flwr here" in capsys.readouterr().out


def test_the_former_only_option_becomes_names():
    assert translate(["--only", "a,b", "--out", "x"]) == ["a", "b", "--out", "x"]
    assert translate(["--only=scale", "--scale-clients", "8"]) == ["scale", "--scale-clients", "8"]


def test_plan_keeps_the_order_named_and_runs_a_name_once(known):
    args = build_parser(known).parse_intermixed_args(["startup", "libraries", "startup", "--sizes", "64"])
    todo = plan(args, known)
    assert [s.name for s, _ in todo] == ["startup", "libraries"]
    assert todo[1][1] == {"sizes": (64,)}


def test_the_benchmarks_doc_lists_every_study(known):
    doc = (Path(__file__).resolve().parents[2] / "docs" / "benchmarks.md").read_text()
    missing = [name for name in known if f"| `{name}` |" not in doc]
    assert not missing, f"docs/benchmarks.md lacks {missing}"
