"""Developer sessions. ``nox -l`` lists them; ``nox`` runs the default ones (tests, lint).

Sessions reuse the interpreter that `tools/install.sh` prepared (``venv_backend="none"``):
a fresh virtualenv would have to rebuild Pyfhel and re-resolve torch, which here must be
the CPU wheel pinned in the install script. Two exceptions build a virtualenv of their own: ``newest`` (over
that interpreter's packages) and the ``openfhe`` sessions: openfhe publishes extensions for CPython 3.10 and
3.12 only, so they build one (no torch) on whichever of those imports it.
"""

from __future__ import annotations

import datetime
import os
import re
import shutil
import subprocess
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import nox

nox.options.default_venv_backend = "none"
nox.options.sessions = ["tests", "lint"]


@nox.session
def tests(session: nox.Session) -> None:
    """Run the test suite (pytest options after --; the fast loop: nox -s tests -- -m "not slow")."""
    session.run("python", "-m", "pytest", "-q", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    """Ruff lint and format check."""
    session.run("ruff", "check", "hebench", "tests", "tools", "noxfile.py")
    session.run("ruff", "format", "--check", "hebench", "tests", "tools", "noxfile.py")


@nox.session(venv_backend="venv", venv_params=["--system-site-packages"])
def newest(session: nox.Session) -> None:
    """Fast tests against the newest release every dependency range admits (pytest options after --).

    Resolved as `pip install hebench` resolves them today (no extras: Flower's pins typer), so a new release that
    breaks hebench fails here first; torch and torchvision stay the installed CPU builds (a resolver would fetch
    PyPI's CUDA ones).
    """
    installed = Path(session.create_tmp()) / "installed-torch.txt"
    installed.write_text("".join(f"{name}=={version(name)}\n" for name in ("torch", "torchvision")))
    session.install("--upgrade", "--upgrade-strategy", "eager", "--constraint", str(installed), ".[test]")
    session.run("python", "-m", "pip", "list", "--local")  # what was resolved: the record of a failure's cause
    session.run("python", "-m", "pytest", "-q", "-m", "not slow", "-p", "no:cacheprovider", *session.posargs)


@nox.session
def bench(session: nox.Session) -> None:
    """Benchmark studies (nox -s bench -- NAME...: those; -- --list: all, one line each); JSON: reports/bench."""
    session.run("python", "-m", "hebench.bench", *session.posargs)


# openfhe publishes one build per CPython, all tagged py3-none-any: pip picks by Requires-Python, so CPython 3.12
# gets the *.24.4 builds (a cp312 extension needing libstdc++ with GLIBCXX_3.4.32, e.g. Ubuntu 24.04) and 3.10 the
# *.22.4 ones (cp310); elsewhere pip installs a build that does not import. The first that imports is used.
OPENFHE_PYTHONS = ("3.12", "3.10")
OPENFHE_VENV_NEEDS = ("numpy", "pydantic", "PyYAML", "psutil", "typer", "rich", "phe", "gmpy2", "tenseal", "zstandard")
OPENFHE_TESTS = ("tests/crypto/test_openfhe_adapter.py", "tests/crypto/test_adapter_contract.py", "-k", "openfhe")


def _requirements(names: tuple[str, ...]) -> list[str]:
    """The ``openfhe`` extra and these dependencies with pyproject.toml's ranges; the CLI's typer and click as this
    interpreter has them (the versions the main environment's tests ran with)."""
    import tomllib  # Python 3.11+, as the interpreter tools/install.sh prepares

    project = tomllib.loads(Path("pyproject.toml").read_text())["project"]
    wanted = {name.lower() for name in names}
    picked = [dep for dep in project["dependencies"] if re.split(r"[<>=!~ ;\[]", dep)[0].lower() in wanted]
    picked += project["optional-dependencies"]["openfhe"]
    for pinned in ("typer", "click"):
        try:
            picked = [dep for dep in picked if not dep.startswith(pinned)] + [f"{pinned}=={version(pinned)}"]
        except PackageNotFoundError:
            pass
    return [*picked, "pytest>=8"]


def _runs_as(executable: str, minor: str) -> bool:
    probe = [executable, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"]
    try:
        done = subprocess.run(probe, capture_output=True, text=True, timeout=60, check=False)
    except OSError:
        return False
    return done.returncode == 0 and done.stdout.strip() == minor


def _interpreters(minor: str) -> list[str]:
    """CPython ``minor`` executables that run: on PATH, then pyenv's (whose shims refuse inactive versions)."""
    found = [exe for exe in (shutil.which(f"python{minor}"),) if exe]
    root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    found += sorted(str(p) for p in root.glob(f"versions/{minor}.*/bin/python{minor}"))
    return [exe for exe in found if _runs_as(exe, minor)]


def _openfhe_venv(session: nox.Session) -> Path:
    """A virtualenv (.nox/openfhe-3.X) on the first Python where openfhe imports, 3.12 then 3.10, holding
    openfhe, hebench (--no-deps, editable) and what its crypto and `compare libraries` need; skip if none."""
    tried = []
    needs = _requirements(OPENFHE_VENV_NEEDS)
    for minor in OPENFHE_PYTHONS:
        pythons = _interpreters(minor)
        if not pythons:
            tried.append(f"CPython {minor}: no interpreter found")
            continue
        venv = Path(".nox") / f"openfhe-{minor}"
        python = venv / "bin" / "python"
        if not python.exists():
            session.run(pythons[0], "-m", "venv", str(venv), external=True)
        session.log(f"installing openfhe and hebench's light dependencies in {venv} (the first time: minutes)")
        pip = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
        alone = {"PYTHONPATH": ""}  # pip would otherwise see this tree's hebench.egg-info and its torch requirement
        session.run(*pip, *needs, env=alone, external=True)
        session.run(*pip, "--no-deps", "-e", ".", env=alone, external=True)
        probe = subprocess.run([str(python), "-c", "import openfhe"], capture_output=True, text=True, check=False)
        if probe.returncode == 0:
            torch = subprocess.run([str(python), "-c", "import torch"], capture_output=True, check=False)
            if torch.returncode == 0:
                session.error(f"torch imports in {venv}: remove it (these sessions hold that crypto needs no torch)")
            session.log(f"openfhe imports on CPython {minor}: {venv} (torch does not)")
            return venv
        last = (probe.stderr.strip().splitlines() or ["no output"])[-1]
        tried.append(f"CPython {minor}: {last}")
        session.log(f"openfhe does not import on CPython {minor}: {last}")
    session.skip("openfhe imports on no Python here: " + "; ".join(tried))
    raise AssertionError("unreachable")  # session.skip raises


@nox.session
def openfhe(session: nox.Session) -> None:
    """OpenFHE adapter tests on the first Python where openfhe imports (3.12, else 3.10), in a venv without torch."""
    venv = _openfhe_venv(session)
    session.run(
        str(venv / "bin" / "python"),
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        *OPENFHE_TESTS,
        *session.posargs,
        external=True,
    )


@nox.session(name="openfhe-compare")
def openfhe_compare(session: nox.Session) -> None:
    """hebench compare libraries in that venv: OpenFHE beside tenseal-ckks and seal-bfv, 1 thread, 1,206,590 values."""
    venv = _openfhe_venv(session)
    args = session.posargs or ["--adapters", "openfhe-ckks,openfhe-bfv,tenseal-ckks,seal-bfv", "--sizes", "1206590"]
    session.run(str(venv / "bin" / "hebench"), "compare", "libraries", *args, external=True)


@nox.session
def demo(session: nox.Session) -> None:
    """The README's main job: the quickstart suite (report in results/demo-DATE/), then this host's HE costs."""
    out = f"results/demo-{datetime.datetime.now():%Y%m%d-%H%M%S}"  # a fresh folder: a rerun never meets an old one
    session.run("hebench", "run", "suites/quickstart.yaml", "--out", out, *session.posargs)
    session.run("hebench", "compare", "libraries", "--sizes", "4096")
