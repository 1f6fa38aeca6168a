"""heops is the product side (``hebench compare libraries``, ``hebench tune``): it never imports the benchmark
studies (bench/ may import heops, not the reverse)."""

from __future__ import annotations

import ast
from pathlib import Path

HEOPS = Path(__file__).resolve().parents[2] / "hebench" / "heops"


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_heops_imports_nothing_from_bench():
    modules = sorted(HEOPS.glob("*.py"))
    assert modules
    for path in modules:
        bad = [name for name in _imports(path) if name == "hebench.bench" or name.startswith("hebench.bench.")]
        assert not bad, f"{path.name} imports {bad}"
