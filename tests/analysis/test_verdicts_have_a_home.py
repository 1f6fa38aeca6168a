"""Verdicts have a home (#35): analysis/ decides and never draws, prints or reads the report; the terminal reads
analysis/, never report/; the pure statistics import nothing of hebench above themselves, so the lowest layers
(measure/, inversion/scoring) can use them; the terminal's renderers form no import circle."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "hebench"
# the pure statistics: one sample's summary, Welch, Wilson/Newcombe, Pareto sets over intervals
PURE = ("measure/sample.py", "analysis/stats.py", "analysis/success.py", "analysis/pareto.py")


def imports(path: Path) -> set[str]:
    """Every module ``path`` imports, at any depth of its code (function-level imports included)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_analysis_decides_and_never_draws_prints_or_reads_the_report():
    for path in sorted((ROOT / "analysis").glob("*.py")):
        bad = {m for m in imports(path) if m.split(".")[0] in ("matplotlib", "rich", "jinja2")}
        bad |= {m for m in imports(path) if m.startswith(("hebench.report", "hebench.cli"))}
        assert not bad, (path.name, bad)
        calls = [n for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.Call)]
        assert not [c for c in calls if isinstance(c.func, ast.Name) and c.func.id == "print"], path.name


def test_the_terminal_reads_analysis_never_the_report():
    for path in [*sorted((ROOT / "cli" / "render").glob("*.py")), ROOT / "cli" / "show.py"]:
        assert not {m for m in imports(path) if m.startswith("hebench.report")}, path


def test_the_pure_statistics_import_nothing_of_hebench_above_them():
    allowed = {"hebench.analysis.stats", "hebench.analysis.success"}
    for name in PURE:
        ours = {m for m in imports(ROOT / name) if m.startswith("hebench")}
        assert ours <= allowed, (name, ours)
        assert {m.split(".")[0] for m in imports(ROOT / name)} <= {
            "__future__", "collections", "dataclasses", "functools", "math", "statistics", "typing", "numpy",
            "scipy", "hebench",
        }, name  # fmt: skip


def test_measure_imports_nothing_above_it():
    for path in sorted((ROOT / "measure").glob("*.py")):
        above = {m for m in imports(path) if m.startswith("hebench.") and not m.startswith("hebench.measure")}
        assert not above, (path.name, above)


def test_the_terminal_renderers_form_no_import_circle():
    render = {p.stem: p for p in (ROOT / "cli" / "render").glob("*.py")}
    graph = {
        name: {m.rsplit(".", 1)[1] for m in imports(path) if m.startswith("hebench.cli.render.")}
        for name, path in render.items()
    }

    def reaches(start: str, goal: str, seen: frozenset[str] = frozenset()) -> bool:
        return any(n == goal or (n not in seen and reaches(n, goal, seen | {n})) for n in graph.get(start, ()))

    assert not [name for name in graph if reaches(name, name)], graph
