"""The registry of modes: one line per built-in protection (its spec module); ``register_mode`` adds one more.

A protection is a package of :mod:`hebench.protections` whose ``spec`` module defines ``SPEC``, a
:class:`~hebench.protections.spec.ModeSpec` (see docs/development.md, "Adding a protection").
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from hebench.errors import ParameterError
from hebench.protections.spec import ModeSpec

BUILT_IN = (  # in the order suites' error messages and the docs list them
    "hebench.protections.raw.spec",
    "hebench.protections.host_he.spec",
    "hebench.protections.offload.spec",
    "hebench.protections.secagg.spec",
    "hebench.protections.sharing.spec",
    "hebench.protections.decryptor_he.spec",
)

_MODES: dict[str, ModeSpec] = {}


def register_mode(spec: ModeSpec) -> None:
    """Add a mode (a plugin's, or a test's); names are unique."""
    if spec.name in _MODES and _MODES[spec.name] != spec:
        raise ParameterError(f"a mode named '{spec.name}' is already registered", "choose another name")
    _MODES[spec.name] = spec


def mode_names(where: Callable[[ModeSpec], bool] | None = None) -> tuple[str, ...]:
    """Every registered mode's name, or those whose spec ``where`` holds for (``lambda s: s.survives_dropout``)."""
    return tuple(name for name, spec in _MODES.items() if where is None or where(spec))


def get_mode(name: str) -> ModeSpec:
    try:
        return _MODES[name]
    except KeyError:
        raise ParameterError(f"unknown mode '{name}'", f"choose one of {', '.join(_MODES)}") from None


def find_mode(name: str | None) -> ModeSpec | None:
    """The spec of a mode named in stored records, or None for one this hebench does not know."""
    return _MODES.get(name or "")


for _module in BUILT_IN:
    register_mode(importlib.import_module(_module).SPEC)
