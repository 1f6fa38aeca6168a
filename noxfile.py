"""Developer sessions. ``nox -l`` lists them; ``nox`` runs the default ones (tests, lint).

Sessions reuse the interpreter that `tools/install.sh` prepared (``venv_backend="none"``):
a fresh virtualenv would have to rebuild Pyfhel and re-resolve torch, which here must be
the CPU wheel pinned in the install script. ``newest`` alone has a virtualenv, over that
interpreter's packages.
"""

from __future__ import annotations

import datetime
from importlib.metadata import version
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
    """Benchmarks: HE libraries, Paillier packing, CNN rounds (host-HE, offload, Flower), scale; JSON: reports/bench."""
    session.run("python", "-m", "hebench.bench.suite", *session.posargs)


@nox.session
def demo(session: nox.Session) -> None:
    """The README's main job: the quickstart suite (report in results/demo-DATE/), then this host's HE costs."""
    out = f"results/demo-{datetime.datetime.now():%Y%m%d-%H%M%S}"  # a fresh folder: a rerun never meets an old one
    session.run("hebench", "run", "suites/quickstart.yaml", "--out", out, *session.posargs)
    session.run("hebench", "compare", "libraries", "--sizes", "4096")
