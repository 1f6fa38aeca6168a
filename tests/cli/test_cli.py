"""The CLI through Typer's runner: output, exit codes, files kept on failure."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from hebench import __version__
from hebench.cli.main import app

runner = CliRunner()


def test_version():
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and __version__ in result.stdout


def test_backends_json_lists_every_adapter():
    result = runner.invoke(app, ["backends", "--format", "json"])
    assert result.exit_code == 0
    names = {row["name"] for row in json.loads(result.stdout)}
    assert {"plain", "paillier", "openfhe-bfv"} <= names


def test_compare_libraries_json_and_out_file(tmp_path):
    out, cal = tmp_path / "bench.jsonl", tmp_path / "cal.json"
    args = [
        "compare",
        "libraries",
        "--adapters",
        "plain,paillier",
        "--sizes",
        "64",
        "-p",
        "paillier.key_bits=2048",
        "--repeats",
        "2",
        "--budget",
        "1",
        "--format",
        "json",
        "--out",
        str(out),
        "--calibration-out",
        str(cal),
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    by_name = {r["adapter"]: r for r in data["results"]}
    assert by_name["paillier"]["info"]["params"]["key_bits"] == 2048
    assert by_name["paillier"]["error"]["within_precision"]
    assert by_name["plain"]["bytes"]["fresh_per_value"] >= 4.0
    kinds = [json.loads(line)["kind"] for line in out.read_text().splitlines()]
    assert kinds == ["environment", "library_benchmark", "library_benchmark"]
    assert set(json.loads(cal.read_text())["adapters"]) == {"plain", "paillier"}


def _without(monkeypatch, missing: str) -> None:
    """The registry reports ``missing`` unavailable, as on a Python where its library does not import."""
    import dataclasses

    from hebench.heops import compare as heops_compare

    real = heops_compare.status

    def status(name: str):
        st = real(name)
        if name != missing:
            return st
        return dataclasses.replace(st, available=False, version=None, reason=f"cannot import {st.library}: here")

    monkeypatch.setattr(heops_compare, "status", status)


def test_compare_libraries_shows_each_measurement_and_names_what_it_skipped_and_why(monkeypatch):
    _without(monkeypatch, "openfhe-ckks")
    args = ["compare", "libraries", "--adapters", "plain,openfhe-ckks", "--sizes", "16,64", "--repeats", "2"]
    table = runner.invoke(app, [*args, "--budget", "1"], env={"COLUMNS": "80"})
    assert table.exit_code == 0, table.output
    lines = table.stdout.splitlines()
    assert lines[0].startswith("measuring 2 (adapter, size) pairs") and lines[1].startswith("1 adapter(s) skipped")
    assert lines[2].startswith("[1/2] plain × 16 values: ") and lines[3].startswith("[2/2] plain × 64 values: ")
    tail = table.stdout[table.stdout.index("skipped openfhe-ckks") :]
    assert "cannot import openfhe: here" in tail and "install: pip install 'hebench[openfhe]'" in tail

    as_json = runner.invoke(app, [*args, "--budget", "1", "--format", "json"])
    assert as_json.exit_code == 0, as_json.output
    data = json.loads(as_json.stdout)  # progress lines go to stderr: stdout stays JSON
    assert [r["adapter"] for r in data["results"]] == ["plain", "plain"]
    assert data["skipped"] == [
        {
            "adapter": "openfhe-ckks",
            "reason": "cannot import openfhe: here",
            "install_hint": "pip install 'hebench[openfhe]' on CPython 3.10 or 3.12",
        }
    ]
    assert "[2/2] plain × 64 values: " in as_json.stderr


def test_compare_libraries_refuses_when_nothing_asked_for_imports(monkeypatch):
    _without(monkeypatch, "openfhe-bfv")
    result = runner.invoke(app, ["compare", "libraries", "--adapters", "openfhe-bfv", "--sizes", "8"])
    assert result.exit_code == 3 and "none of the adapters asked for imports here" in result.output
    assert "hebench[openfhe]" in result.output and "Traceback" not in result.output


def test_bad_inputs_give_one_message_and_nonzero_exit(tmp_path):
    out = tmp_path / "keep.jsonl"
    out.write_text("previous line\n")
    cases = [
        (["compare", "libraries", "--adapters", "nope", "--out", str(out)], "unknown adapter"),
        (
            [
                "compare",
                "libraries",
                "--adapters",
                "paillier",
                "-p",
                "paillier.key_bits=1024",
                "--sizes",
                "8",
                "--out",
                str(out),
            ],
            "below 2048",
        ),
        (["compare", "libraries", "--adapters", "plain", "--sizes", "ten"], "comma-separated integers"),
        (["compare", "libraries", "--adapters", "plain", "-p", "plain"], "KEY=VALUE"),
        (
            ["compare", "libraries", "--adapters", "paillier", "-p", "paillier.bogus=1", "--sizes", "8"],
            "invalid parameters",
        ),
    ]
    for args, message in cases:
        result = runner.invoke(app, args)
        assert result.exit_code != 0, args
        assert message in result.output, (args, result.output)
        assert "Traceback" not in result.output
    assert out.read_text().startswith("previous line\n")
