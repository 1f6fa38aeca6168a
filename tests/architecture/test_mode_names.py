"""Only hebench/protections/ knows the modes by name: everything else asks a mode's spec.

A registered mode's name as a string literal outside ``hebench/protections/`` fails this test where it is

- compared (``==``, ``!=``, ``in``, ``not in``, alone or in a literal tuple/list/set), or a ``match`` case;
- a key of a dict display that has two or more mode names as keys (a table keyed by mode), unless each such key
  labels a configuration of that very mode (``{"raw": {"mode": "raw"}}``: a bench choosing modes, as data);
- one of two or more mode names in a tuple/list/set bound to a name (``HE_MODES = ("host-he", ...)``: a list of
  modes kept outside the registry, to be compared later).

Choosing a mode as data (``{"mode": "raw"}``, ``mode: str = "raw"``) is fine. A fact about modes belongs to
:class:`hebench.protections.spec.ModeSpec` (a field, property or method) and the code asks the spec.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from hebench.protections import mode_names

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "hebench"
HOME = PACKAGE / "protections"
NAMES = frozenset(mode_names())


def _is_name(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and node.value in NAMES


def _names_in(node: ast.AST) -> list[ast.Constant]:
    """The mode-name literals of an operand: the literal itself, or the elements of a literal collection."""
    if _is_name(node):
        return [node]  # type: ignore[list-item]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [e for e in node.elts if _is_name(e)]  # type: ignore[misc]
    return []


def _labels_its_mode(key: ast.Constant, value: ast.AST) -> bool:
    """``{"raw": {"mode": "raw", ...}}``: the key is the label of a configuration of that mode."""
    if not isinstance(value, ast.Dict):
        return False
    return any(
        isinstance(k, ast.Constant) and k.value == "mode" and isinstance(v, ast.Constant) and v.value == key.value
        for k, v in zip(value.keys, value.values, strict=True)
    )


def leaks(source: str) -> Iterator[tuple[int, str, str]]:
    """(line, mode name, how it is used) for every leak of a mode name in ``source``."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            for operand in (node.left, *node.comparators):
                for name in _names_in(operand):
                    yield name.lineno, name.value, "compared"
        elif isinstance(node, ast.match_case):
            for pattern in ast.walk(node.pattern):
                if isinstance(pattern, ast.MatchValue) and _is_name(pattern.value):
                    yield pattern.lineno, pattern.value.value, "a match case"  # type: ignore[attr-defined]
        elif isinstance(node, ast.Dict):
            keyed = [(k, v) for k, v in zip(node.keys, node.values, strict=True) if _is_name(k)]
            if len(keyed) >= 2:
                for key, value in keyed:
                    if not _labels_its_mode(key, value):  # type: ignore[arg-type]
                        yield key.lineno, key.value, "a key of a dict keyed by mode"  # type: ignore[union-attr]
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            named = _names_in(node.value) if isinstance(node.value, (ast.Tuple, ast.List, ast.Set)) else []
            if len(named) >= 2:
                for name in named:
                    yield name.lineno, name.value, "in a list of modes"


def test_no_mode_name_is_compared_or_keyed_outside_protections():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if HOME in path.parents:
            continue
        for line, name, how in leaks(path.read_text()):
            found.append(f"{path.relative_to(ROOT)}:{line}: '{name}' {how}")
    assert not found, "ask the mode's spec instead (hebench.protections.spec.ModeSpec):\n" + "\n".join(found)


def test_the_registry_knows_the_built_in_modes():
    assert {"raw", "host-he", "offload", "secagg", "secret-sharing", "decryptor-he"} <= NAMES


def test_control_each_kind_of_leak_is_caught():
    source = """
if config.mode == "secagg": pass
if "raw" != mode: pass
if row.mode in ("secagg", "secret-sharing"): pass
match mode:
    case "offload": pass
MARKERS = {"raw": "o", "host-he": "s"}
HE_MODES = ("host-he", "offload", "decryptor-he")
"""
    caught = {(line, name) for line, name, _ in leaks(source)}
    assert caught == {
        (2, "secagg"),
        (3, "raw"),
        (4, "secagg"),
        (4, "secret-sharing"),
        (6, "offload"),
        (7, "raw"),
        (7, "host-he"),
        (8, "host-he"),
        (8, "offload"),
        (8, "decryptor-he"),
    }


def test_control_choosing_a_mode_as_data_is_not_a_leak():
    source = """
config = {"mode": "raw"}
mode: str = "raw"
CONFIGS = {"raw": {"mode": "raw"}, "host-he": {"mode": "host-he", "adapter": "tenseal-ckks"}}
row = {"protection": "secagg", "secagg": {"num_shares": 3}}
if view == View.RAW: pass
"""
    assert list(leaks(source)) == []
