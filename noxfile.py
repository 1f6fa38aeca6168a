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
    """Run the whole test suite, as CI does (pytest options after --; the fast tier: nox -s fast)."""
    session.run("python", "-m", "pytest", "-q", *session.posargs)


@nox.session
def fast(session: nox.Session) -> None:
    """The fast tier: every test not marked slow (the end-to-end runs and attack optimisations are)."""
    session.run("python", "-m", "pytest", "-q", "-m", "not slow", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    """Ruff lint and format check."""
    session.run("ruff", "check", "hebench", "tests", "tools", "noxfile.py")
    session.run("ruff", "format", "--check", "hebench", "tests", "tools", "noxfile.py")


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
