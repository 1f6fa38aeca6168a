"""The studies of ``python -m hebench.bench``: each study module registers itself with :func:`study`.

As nox's registry: a decorator fills one dict. :func:`load_all` imports every module directly in this
package, so adding a study is one module and no edit to a central list; helpers shared by studies live in
``hebench/bench/support/``. A study returns a JSON-able dict; the command writes it with the environment.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from difflib import get_close_matches
from typing import Any, TypeVar

from hebench.errors import HebenchError, ParameterError

StudyFn = Callable[..., dict[str, Any]]
F = TypeVar("F", bound=StudyFn)

RUNNER_MODULES = frozenset({"registry", "command", "__main__", "suite"})  # bench/ modules that are not studies


@dataclass(frozen=True)
class Option:
    """A command-line option of one study: ``flag`` sets the study function's keyword ``param``.

    ``parse`` turns the flag's text into the value (raising :class:`ParameterError`); ``None`` makes the flag a
    switch (``True`` when given). Without the flag, the function's own default applies.
    """

    flag: str
    param: str
    help: str
    parse: Callable[[str], Any] | None = None


@dataclass(frozen=True)
class Study:
    name: str
    run: StudyFn
    help: str  # the first paragraph of the function's docstring, on one line
    default: bool  # run when no study is named
    options: tuple[Option, ...]

    @property
    def module(self) -> str:
        return self.run.__module__


_STUDIES: dict[str, Study] = {}


def _help(fn: StudyFn) -> str:
    doc = inspect.getdoc(fn)
    if not doc:
        raise HebenchError(f"study function {fn.__module__}.{fn.__qualname__} has no docstring", "give it one")
    return " ".join(doc.split("\n\n")[0].split())


def study(name: str, *, default: bool = True, options: Sequence[Option] = ()) -> Callable[[F], F]:
    """Register the decorated function as the study ``name`` (its docstring is the help ``--list`` shows)."""

    def register(fn: F) -> F:
        known = _STUDIES.get(name)
        if known is not None and (known.module, known.run.__qualname__) != (fn.__module__, fn.__qualname__):
            raise HebenchError(
                f"two studies are named '{name}': {known.module} and {fn.__module__}", "rename one of them"
            )
        _STUDIES[name] = Study(name, fn, _help(fn), default, tuple(options))
        return fn

    return register


def load_all() -> dict[str, str]:
    """Import every study module; returns the modules that could not be imported here, with the reason."""
    import hebench.bench as package

    broken = {}
    for info in pkgutil.iter_modules(package.__path__):
        if info.ispkg or info.name in RUNNER_MODULES:
            continue
        module = f"{package.__name__}.{info.name}"
        try:
            importlib.import_module(module)
        except ImportError as err:  # an optional dependency (flwr, opacus) missing here
            broken[module] = str(err)
    return broken


def studies() -> dict[str, Study]:
    """Every study registered so far, by name (call :func:`load_all` first for all of them)."""
    return dict(_STUDIES)


def find(name: str) -> Study:
    """The study ``name``, or an error naming the closest one."""
    if name in _STUDIES:
        return _STUDIES[name]
    close = get_close_matches(name, list(_STUDIES), n=1)
    hint = f"did you mean '{close[0]}'? " if close else ""
    raise ParameterError(f"no study is named '{name}'", f"{hint}python -m hebench.bench --list lists them")


def ints(text: str) -> tuple[int, ...]:
    """``"8,32"`` -> ``(8, 32)``: comma-separated positive integers."""
    try:
        values = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        values = ()
    if not values or min(values) < 1:
        raise ParameterError(f"'{text}' is not a list of positive integers", "write e.g. 8,32,128")
    return values


def words(text: str) -> tuple[str, ...]:
    """``"lte,datacenter"`` -> ``("lte", "datacenter")``."""
    values = tuple(part.strip() for part in text.split(",") if part.strip())
    if not values:
        raise ParameterError(f"'{text}' names nothing", "write comma-separated names, e.g. lte,datacenter")
    return values


def number(text: str) -> float:
    """A positive number."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value > 0 or value == float("inf"):
        raise ParameterError(f"'{text}' is not a positive number", "write e.g. 20 or 0.5")
    return value


def count(text: str) -> int:
    """A positive integer."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise ParameterError(f"'{text}' is not a positive integer", "write e.g. 20")
    return value
