"""Developer sessions. ``nox -l`` lists them; ``nox`` runs the default ones (tests, lint).

Sessions reuse the interpreter that `tools/install.sh` prepared (``venv_backend="none"``):
a fresh virtualenv would have to rebuild Pyfhel and re-resolve torch, which here must be
the CPU wheel pinned in the install script.
"""

from __future__ import annotations

import datetime

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


@nox.session
def bench(session: nox.Session) -> None:
    """Benchmark studies (nox -s bench -- NAME...: those; -- --list: all, one line each); JSON: reports/bench."""
    session.run("python", "-m", "hebench.bench", *session.posargs)


@nox.session
def demo(session: nox.Session) -> None:
    """The README's main job: the quickstart suite (report in results/demo-DATE/), then this host's HE costs."""
    out = f"results/demo-{datetime.datetime.now():%Y%m%d-%H%M%S}"  # a fresh folder: a rerun never meets an old one
    session.run("hebench", "run", "suites/quickstart.yaml", "--out", out, *session.posargs)
    session.run("hebench", "compare", "libraries", "--sizes", "4096")
