"""The suites, attack recipes and dataset files ship inside hebench's wheel (one copy in git: the package's links
to suites/, attacks/ and datasets/), and `hebench run NAME` runs a shipped suite by name."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hebench.cli.main import app
from hebench.config.catalog import SUITES, resolve_suite, shipped_names, shipped_suites
from hebench.errors import SuiteError

ROOT = Path(__file__).resolve().parents[2]


def test_the_package_data_are_the_repository_files_themselves():
    assert SUITES.resolve() == ROOT / "suites"
    assert (ROOT / "hebench" / "config" / "attacks").resolve() == ROOT / "attacks"
    assert (ROOT / "hebench" / "data" / "datasets").resolve() == ROOT / "datasets"
    assert shipped_names() == sorted(p.stem for p in (ROOT / "suites").glob("*.yaml"))


def test_a_suite_by_name_is_the_shipped_file_and_a_path_is_taken_as_given(tmp_path, monkeypatch):
    assert resolve_suite("quickstart") == SUITES / "quickstart.yaml"
    assert resolve_suite(ROOT / "suites" / "quickstart.yaml") == ROOT / "suites" / "quickstart.yaml"
    monkeypatch.chdir(tmp_path)
    (tmp_path / "quickstart").write_text("name: mine\n")  # a file of that name here is the user's
    assert resolve_suite("quickstart") == Path("quickstart")


@pytest.mark.parametrize(
    ("given", "words"),
    [
        ("quickstrat", ["no suite file or shipped suite named quickstrat", "did you mean quickstart?", "suites"]),
        ("suites/quickstart.yaml", ["no suite file suites/quickstart.yaml", "hebench run quickstart"]),
        ("elsewhere/mine.yaml", ["no suite file elsewhere/mine.yaml", "check the path"]),
    ],
)
def test_a_missing_suite_says_how_to_run_a_shipped_one(tmp_path, monkeypatch, given, words):
    monkeypatch.chdir(tmp_path)  # outside the checkout, as an installed hebench runs
    with pytest.raises(SuiteError) as err:
        resolve_suite(given)
    text = f"{err.value.problem} {err.value.fix}"
    assert all(w in text for w in words), text


def test_hebench_run_takes_a_name_and_refuses_a_mistyped_one(tmp_path):
    result = CliRunner().invoke(app, ["run", "quickstrat", "--out", str(tmp_path / "out")])
    assert result.exit_code == 2 and "did you mean quickstart?" in result.output and "fix:" in result.output
    assert not (tmp_path / "out").exists()


def test_hebench_suites_lists_each_with_its_description_and_size():
    result = CliRunner().invoke(app, ["suites", "--format", "json"])
    assert result.exit_code == 0, result.output
    listed = {s["name"]: s for s in json.loads(result.output)}
    assert sorted(listed) == shipped_names()
    quick = listed["quickstart"]
    assert quick["description"].startswith("3 clients on scikit-learn's digits (IID), a small MLP")
    assert quick["size"] == "5 configurations x 8 rounds, 3 clients, mlp on digits"
    assert listed["scale"]["size"].startswith("3 configurations x 2 rounds, 1000 clients")
    assert all(s.description and "\n" not in s.description for s in shipped_suites())
    table = CliRunner().invoke(app, ["suites"], env={"COLUMNS": "120"})
    assert table.exit_code == 0 and "quickstart" in table.output and "8 rounds" in table.output


_INSTALLED = textwrap.dedent(
    """
    import json
    from hebench.config.catalog import resolve_suite
    from hebench.config import load_suite
    from hebench.data.cache import cache_dir, card, femnist_sample
    from hebench.inversion.recipes import load_recipe, recipe_names
    suite = load_suite(resolve_suite("quickstart"))
    print(json.dumps({
        "quickstart": str(resolve_suite("quickstart")), "suite": suite.name,
        "sample": str(femnist_sample()), "recipes": recipe_names(), "idlg": load_recipe("idlg").steps,
        "card": card("digits")["name"], "cache": str(cache_dir()),
    }))
    """
)


def test_a_wheel_carries_the_suites_recipes_and_datasets_and_runs_from_them(tmp_path):
    source = tmp_path / "source"  # a copy: the build writes build/ and egg-info where it runs
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    ignore = shutil.ignore_patterns("__pycache__", "cache")  # never datasets/cache: downloads stay out
    for name in ("hebench", "suites", "attacks", "datasets"):
        shutil.copytree(ROOT / name, source / name, symlinks=True, ignore=ignore)
    build = [sys.executable, "-m", "pip", "wheel", ".", "--no-deps", "--no-build-isolation", "-q", "-w", "dist"]
    subprocess.run(build, cwd=source, check=True, capture_output=True, timeout=600)
    (wheel,) = (source / "dist").glob("hebench-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for folder, inside in (("suites", "config/suites"), ("attacks", "config/attacks")):
        assert {f"hebench/{inside}/{p.name}" for p in (ROOT / folder).glob("*.yaml")} <= names
    shipped = {f"hebench/data/datasets/{p.relative_to(ROOT / 'datasets')}" for p in (ROOT / "datasets").rglob("*")}
    assert {n for n in shipped if "/cache/" not in n and (ROOT / n.replace("hebench/data/", "")).is_file()} <= names
    assert not [n for n in names if "/cache/" in n]

    installed = tmp_path / "site"  # a wheel installs as its files unpacked on the path
    zipfile.ZipFile(wheel).extractall(installed)
    env = {**os.environ, "PYTHONPATH": str(installed), "HOME": str(tmp_path / "home")}
    env.pop("HEBENCH_DATA", None)
    done = subprocess.run(
        [sys.executable, "-c", _INSTALLED], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["quickstart"] == str(installed / "hebench" / "config" / "suites" / "quickstart.yaml")
    assert found["suite"] == "quickstart" and found["card"] == "digits"
    assert found["sample"] == str(installed / "hebench" / "data" / "datasets" / "femnist-sample" / "fedlab")
    assert Path(found["sample"], "train", "train.json").is_file()
    assert found["recipes"] == sorted(p.stem for p in (ROOT / "attacks").glob("*.yaml"))
    assert found["cache"] == str(tmp_path / "home" / ".cache" / "hebench" / "datasets")  # not in the package
