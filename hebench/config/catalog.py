"""The suites shipped with hebench (package data: the checkout's ``suites/``), and a suite named on the command line.

``hebench run quickstart`` and ``hebench run suites/quickstart.yaml`` run the same file in a checkout; an installed
hebench has only the names.
"""

from __future__ import annotations

from dataclasses import dataclass
from difflib import get_close_matches
from pathlib import Path

from hebench.config.load import load_suite
from hebench.errors import SuiteError

SUITES = Path(__file__).parent / "suites"  # package data; in a checkout, a link to suites/


@dataclass(frozen=True)
class ShippedSuite:
    name: str  # what `hebench run NAME` takes: the file's name without .yaml
    path: Path
    description: str  # the suite's description, its first sentence
    size: str  # configurations x rounds, clients, model and data: how big a run it is, roughly


def shipped_names() -> list[str]:
    return sorted(p.stem for p in SUITES.glob("*.yaml"))


def shipped_suite(name: str) -> ShippedSuite:
    """One shipped suite, read and checked as ``hebench run`` reads it."""
    path = SUITES / f"{name}.yaml"
    suite = load_suite(path)
    first = " ".join(suite.description.split())
    first = first.split(". ", 1)[0].rstrip(".") if first else "(no description)"
    data = suite.data
    clients = "every writer" if data.clients == "all" else f"{data.clients} clients"
    sample = " sample" if data.sample else ""
    rounds = suite.training.rounds
    size = (
        f"{len(suite.configurations)} configurations x {rounds} round{'s' if rounds != 1 else ''}, "
        f"{clients}, {suite.model.name} on {data.dataset}{sample}"
    )
    return ShippedSuite(name, path, first, size)


def shipped_suites() -> list[ShippedSuite]:
    return [shipped_suite(name) for name in shipped_names()]


def resolve_suite(argument: str | Path) -> Path:
    """The suite file ``argument`` names: an existing path as given, else a shipped suite by name (``quickstart``).

    A path that does not exist is never swapped for a shipped file of the same name: the error says how to run
    that one (``hebench run quickstart``)."""
    given = str(argument)
    path = Path(given)
    if path.exists():
        return path
    names = shipped_names()
    if path.suffix == "" and len(path.parts) == 1 and given in names:
        return SUITES / f"{given}.yaml"
    listed = f"the shipped suites: {', '.join(names)} (hebench suites)"
    if path.stem in names:
        fix = f"run the shipped one by name: hebench run {path.stem}; or pass an existing suite file"
    elif path.suffix == "" and len(path.parts) == 1:
        close = get_close_matches(given, names, n=1)
        fix = f"did you mean {close[0]}? " if close else ""
        fix += f"pass a suite file, or one of {listed}"
    else:
        fix = f"check the path, or run one of {listed}"
    what = "no suite file" if path.suffix or len(path.parts) > 1 else "no suite file or shipped suite named"
    raise SuiteError(f"{what} {given}", fix)
