"""``--set KEY=VALUE``: overrides applied to a suite's YAML before it is validated.

KEY is a dotted path; a list item is named by its index from 0, as in YAML paths: ``configurations.0`` is
configuration 1, ``configurations.1.adapter=seal-bfv`` sets configuration 2's adapter. VALUE is YAML.
"""

from __future__ import annotations

import reprlib
from typing import Any

import yaml

from hebench.errors import SuiteError


def _list_indices(key: str, items: list[Any]) -> str:
    """The fix for a list index that does not exist: the indices there are, and what they name."""
    if not items:
        return f"{key.split('.')[0]} is empty there: add an item to the suite file first"
    last = len(items) - 1
    if key.startswith("configurations."):
        return f"use an index from 0 (configuration 1) to {last} (configuration {last + 1}): items count from 0"
    return f"use an index from 0 to {last}: items count from 0"


def apply_overrides(raw: dict[str, Any], overrides: list[str], source: str) -> dict[str, Any]:
    """``raw`` with each ``KEY=VALUE`` of ``overrides`` set (in place); SuiteError naming the key otherwise."""
    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise SuiteError(f"--set '{item}' is not KEY=VALUE", "write e.g. --set training.rounds=2")
        node: Any = raw
        *parents, leaf = key.split(".")
        for depth, part in enumerate([*parents, leaf]):
            where = ".".join([*parents, leaf][:depth]) or "the suite"
            if isinstance(node, list):
                try:
                    index = int(part)
                    node[index]  # the index must exist
                except (ValueError, IndexError):
                    raise SuiteError(
                        f"--set {key}: {where} in {source} has no list item '{part}' (it holds {len(node)})",
                        _list_indices(key, node),
                    ) from None
            elif not isinstance(node, dict):
                raise SuiteError(
                    f"--set {key}: {where} in {source} is {type(node).__name__} {reprlib.repr(node)}, not a mapping",
                    f"set {where} itself, or a key of a mapping",
                )
            if depth < len(parents):
                node = node[index] if isinstance(node, list) else node.setdefault(part, {})
        try:
            parsed = yaml.safe_load(value)
        except yaml.YAMLError as err:
            problem = str(err).replace("\n", " ")
            raise SuiteError(
                f"--set {key}: the value {value!r} is not valid YAML ({problem})",
                "quote the value, e.g. --set name='\"a: b\"'",
            ) from None
        if isinstance(node, list):
            node[index] = parsed
        else:
            node[leaf] = parsed
    return raw
