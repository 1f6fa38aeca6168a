"""Bad input to `hebench run` is one `error: … fix: …` message and a non-zero exit, before any run starts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from hebench.cli.main import app
from tests.conftest import INSTALLED

runner = CliRunner()
SUITE = {
    "name": "tiny",
    "data": {"dataset": "digits", "clients": 2},
    "model": {"name": "mlp", "hidden": 4},
    "training": {"rounds": 1},
    "configurations": [{"mode": "raw"}],
}


def _suite(tmp_path: Path, suite: dict | None = None) -> Path:
    path = tmp_path / "suite.yaml"
    path.write_text(yaml.safe_dump(suite or SUITE))
    return path


def _fails_cleanly(args: list[str], code: int = 2) -> str:
    result = runner.invoke(app, args)
    assert result.exit_code == code, result.output
    assert "error:" in result.output and "fix:" in result.output, result.output
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    return result.output


def test_binary_file_as_suite(tmp_path):
    path = tmp_path / "model.bin"
    path.write_bytes(bytes(range(256)) * 8)
    assert "not a text file" in _fails_cleanly(["run", str(path), "--out", str(tmp_path / "out")])
    assert not (tmp_path / "out").exists()


def test_directory_as_suite(tmp_path):
    assert "is a folder" in _fails_cleanly(["run", str(tmp_path), "--out", str(tmp_path / "out")])


def test_set_value_that_is_not_yaml(tmp_path):
    out = _fails_cleanly(["run", str(_suite(tmp_path)), "--set", "name=[unclosed", "--out", str(tmp_path / "o")])
    assert "not valid YAML" in out and "name" in out


@pytest.mark.parametrize("key", ["name.first=1", "training.rounds.x=2", "configurations.7.mode=raw"])
def test_set_into_something_that_is_not_a_mapping(tmp_path, key):
    out = _fails_cleanly(["run", str(_suite(tmp_path)), "--set", key, "--out", str(tmp_path / "o")])
    assert key.split("=")[0] in out


def test_out_that_cannot_be_created(tmp_path, monkeypatch):
    def refuse(self, *args, **kwargs):
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "mkdir", refuse)
    out = _fails_cleanly(["run", str(_suite(tmp_path)), "--out", str(tmp_path / "ro" / "new")])
    assert "cannot write results" in out and "Permission denied" in out


def test_out_that_exists_read_only_keeps_what_is_there(tmp_path, monkeypatch):
    existing = tmp_path / "run"
    existing.mkdir()
    (existing / "results.jsonl").write_text('{"kind": "run"}\n')
    real_write = Path.write_bytes

    def refuse(self, data):
        if self.parent == existing:
            raise PermissionError(13, "Permission denied", str(self))
        return real_write(self, data)

    monkeypatch.setattr(Path, "write_bytes", refuse)
    out = _fails_cleanly(["run", str(_suite(tmp_path)), "--out", str(existing), "--resume"])
    assert "cannot write results" in out
    assert (existing / "results.jsonl").read_text() == '{"kind": "run"}\n'


@pytest.mark.parametrize(
    ("params", "words"),
    [
        ({"key_bits": 1024}, ["configurations.0.params", "below 2048", "allow_insecure"]),
        ({"key_bitz": 3072}, ["configurations.0.params", "key_bitz", "key_bits"]),
    ],
)
def test_adapter_parameters_are_checked_when_the_suite_is_read(tmp_path, params, words):
    suite = {**SUITE, "configurations": [{"mode": "host-he", "adapter": "paillier", "params": params}]}
    out = _fails_cleanly(["run", str(_suite(tmp_path, suite)), "--out", str(tmp_path / "out")])
    assert all(w in out for w in words), out
    assert not (tmp_path / "out").exists()  # failed before the runner made the run folder


@pytest.mark.skipif("tenseal-ckks" not in INSTALLED, reason="TenSEAL not installed")
def test_insecure_lattice_parameters_name_the_level(tmp_path):
    params = {"ring_degree": 4096, "coeff_mod_bits": [30, 40, 40]}  # log Q 110: just under 128 bits
    suite = {**SUITE, "configurations": [{"mode": "host-he", "adapter": "tenseal-ckks", "params": params}]}
    out = _fails_cleanly(["run", str(_suite(tmp_path, suite)), "--out", str(tmp_path / "out")])
    assert "126 bits" in out


def test_a_mistyped_key_is_told_what_it_meant(tmp_path):
    suite = {**SUITE, "trainig": {"rounds": 2}}
    out = _fails_cleanly(["run", str(_suite(tmp_path, suite)), "--out", str(tmp_path / "out")])
    assert "did you mean 'training'?" in out
    assert not (tmp_path / "out").exists()


def test_a_configuration_is_named_as_users_count(tmp_path):
    suite = {**SUITE, "configurations": [{"mode": "raw"}, {"mode": "host-he", "adapter": "rot13"}]}
    out = _fails_cleanly(["run", str(_suite(tmp_path, suite)), "--out", str(tmp_path / "out")])
    assert "configuration 2, field 'configurations.1.adapter'" in " ".join(out.split())


@pytest.mark.parametrize(
    ("override", "words"),
    [
        ("seed=100000000000000000000000000", "a seed is a whole number from 0 to 4294967295"),
        ("measure.timeout_s=1e308", "at most 604800"),
        ("privacy={threats: [{adversary: aggregator, k: 2}]}", "privacy.threats.0.k"),
    ],
)
def test_numbers_no_party_could_use_are_refused_before_the_run(tmp_path, override, words):
    out = _fails_cleanly(["run", str(_suite(tmp_path)), "--set", override, "--out", str(tmp_path / "out")])
    assert words in " ".join(out.split())
    assert not (tmp_path / "out").exists()


def test_a_model_beyond_this_machines_memory_is_refused_not_allocated(tmp_path):
    args = ["run", str(_suite(tmp_path)), "--set", "model.hidden=100000000000", "--out", str(tmp_path / "o")]
    out = " ".join(_fails_cleanly([*args, "--no-report"]).split())
    assert "79,500,000,000,010 parameters" in out and "GiB of memory" in out and "smaller model" in out


def test_check_refuses_a_bad_suite_as_run_does(tmp_path):
    out = _fails_cleanly(["run", str(_suite(tmp_path, {**SUITE, "trainig": {}})), "--check"])
    assert "did you mean 'training'?" in out


# --- results files with lines no hebench wrote: skipped and counted, never a traceback -----------------------

RUN = Path(__file__).resolve().parents[1] / "fixtures" / "run-offload" / "results.jsonl"
_ROUND = next(json.loads(line) for line in RUN.read_text().splitlines() if '"kind": "round"' in line)
BAD_RESULT_LINES = {
    "nested": ("[" * 100_000 + "]" * 100_000, "nests deeper than"),
    "huge round": (json.dumps({**_ROUND, "round": 10**400}), "round.round is out of range"),
    "mistyped": (json.dumps({**_ROUND, "round": "two"}), "round.round should be int"),
}
READERS = {
    "show": lambda run, tmp: ["show", str(run)],
    "report": lambda run, tmp: ["report", str(run), "-o", str(tmp / "r.html")],
    "attack": lambda run, tmp: ["attack", str(run), "--dry-run", "--images", "1", "--out", str(tmp / "a")],
}


@pytest.mark.parametrize(
    ("command", "case"),
    [
        *(("show", case) for case in BAD_RESULT_LINES),
        ("report", "nested"),
        ("report", "huge round"),  # was an OverflowError where the report ordered rounds
        ("attack", "nested"),
        ("attack", "mistyped"),
    ],
)
def test_a_bad_results_line_is_skipped_and_counted_by_every_reader(tmp_path, command, case):
    line, why = BAD_RESULT_LINES[case]
    run = tmp_path / "run"
    run.mkdir()
    (run / "results.jsonl").write_text(RUN.read_text() + line + "\n")
    result = CliRunner().invoke(app, READERS[command](run, tmp_path))
    assert result.exit_code == 0, result.output
    assert result.exception is None and "Traceback" not in result.output
    squeezed = "".join(result.output.split())  # the note may wrap, a long path mid-word too
    expected = f"1 line(s) of {run / 'results.jsonl'} skipped"
    assert "".join(expected.split()) in squeezed and "".join(why.split()) in squeezed, result.output


@pytest.mark.parametrize("command", list(READERS))
def test_a_results_file_of_nothing_but_bad_lines_is_one_error(tmp_path, command):
    run = tmp_path / "run"
    run.mkdir()
    (run / "results.jsonl").write_text(BAD_RESULT_LINES["nested"][0] + "\n")
    out = _fails_cleanly(READERS[command](run, tmp_path))
    assert "holdsnohebenchrecords" in "".join(out.split()) and "nestsdeeper" in "".join(out.split())
