"""hebench's modules form layers: no import runs up a layer, and imports between hebench modules form no circle.

Every module belongs to a unit, and every unit to a layer (``LAYERS``, lowest first); a module may import its own
layer and the layers below. A unit is a package under ``hebench/`` (``hebench.links.plan`` is in ``links``),
except where a package spans layers; there its modules are placed by role:

- ``protections/``: the spec-level modules (the package, ``registry``, ``spec``, ``params``, ``threats``,
  ``threat_rules``, ``shared_rules``, and each protection's package and its own ``spec``/``params``/``threats``)
  sit low, beside crypto: config reads them to validate a suite. ``selective/`` and ``dp/`` modify any mode's
  update, and the FedAvg core in ``fl/`` applies them: they sit just below ``fl``. Every other protections module
  (a protocol's parties, links and servers; an attacker view, in any protection) sits above ``fl``, which it
  builds on.
- ``analysis/``: the pure statistics (``stats``: Welch, bootstrap; ``success``: Wilson, Newcombe) import nothing
  of hebench and sit at the bottom, so that ``measure`` (timing summaries) and ``inversion`` (scoring) use them;
  the verdicts built on them sit above ``inversion``, whose scores they judge.

Both rules cover module-level and function-level imports: a lazy import that runs up a layer is still a
dependency upward, and one that closes a circle still closes it (it only moves the failure to run time).
``if TYPE_CHECKING:`` imports never run: they obey the layers but cannot close a circle. Importing
``hebench.a.b`` from outside ``hebench.a`` also runs ``hebench/a/__init__.py``, so that is an import of ``hebench.a``.

``ALLOWED`` lists the imports that still break a rule, each with the helper who owns the fix; the lead empties
it as their work merges, and a listed import that no longer exists fails here, so the list only shrinks.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "hebench"

# lowest first; a module may import its own layer and the layers below
LAYERS: tuple[frozenset[str], ...] = (
    frozenset({"errors", "statistics"}),  # typed errors; pure statistics (numpy only)
    frozenset({"protections.spec", "crypto", "measure"}),  # what config reads; adapters; meters
    frozenset({"config"}),  # the suite schema
    frozenset({"data", "models", "results", "links", "faults"}),  # datasets, models (a pretrained base has its
    # tokenizer), records, link plans, fault draws: read config
    frozenset({"net"}),  # transport, TLS, admission, shaping
    frozenset({"protections.modifiers"}),  # selective/, dp/: applied to any mode's update by the FedAvg core
    frozenset({"fl"}),  # the FedAvg core: parties, keys, streams, running sum
    frozenset({"protections.protocols"}),  # each protocol's parties, links, servers; attacker views
    frozenset({"inversion"}),  # attacks on what an adversary saw, and their scores
    frozenset({"analysis"}),  # verdicts: Pareto, choice, defended, advice, run comparison
    frozenset({"runtime"}),  # the runner, the local and Flower runtimes
    frozenset({"report", "bench", "heops"}),  # HTML reports, studies, per-operation HE costs
    frozenset({"cli"}),  # commands and terminal rendering (``hebench.__main__`` too)
)
RANK = {unit: i for i, layer in enumerate(LAYERS) for unit in layer}

SPEC_MODULES = frozenset({"registry", "spec", "params", "threats", "threat_rules", "shared_rules"})
MODIFIERS = frozenset({"selective", "dp"})
STATISTICS = frozenset({"hebench.analysis.stats", "hebench.analysis.success"})
# config reads only these (beside itself): errors, the protections' spec level and the adapter registry
CONFIG_READS = frozenset({"errors", "protections.spec"})
CONFIG_READS_MODULES = frozenset({"hebench.crypto", "hebench.crypto.registry"})

# (importer, imported): imports that still break a rule, each with who fixes it; the lead empties this
ALLOWED: dict[tuple[str, str], str] = {
    ("hebench.protections.dp.attacker_view", "hebench.inversion.views.local_update"): (
        "protections helper (with the inversion helper): dp's attacker view replays a client's local training "
        "through inversion's view (protocols -> inversion; inversion reads the attacker views)"
    ),
}


@dataclass(frozen=True)
class Import:
    importer: str
    imported: str
    line: int
    runs: bool  # False: under ``if TYPE_CHECKING:``
    implicit: bool = False  # a package whose ``__init__`` runs before the module imported from it

    def __str__(self) -> str:
        return f"{self.importer}:{self.line} -> {self.imported}"


def modules(root: Path = ROOT) -> dict[str, Path]:
    """Every module under ``root`` (a package named by its ``__init__.py``), by dotted name."""
    found = {}
    for path in root.rglob("*.py"):
        parts = path.relative_to(root.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def unit(module: str, known: dict[str, Path] | None = None) -> str | None:
    """The layered unit of a hebench module (None for the root package, or a module outside hebench)."""
    parts = module.split(".")
    if parts[0] != "hebench" or len(parts) == 1:
        return None
    if module in STATISTICS:
        return "statistics"
    if parts[1] == "__main__":
        return "cli"
    if parts[1] == "protections":
        return _protections_unit(parts[2:], known if known is not None else modules())
    return parts[1]


def _protections_unit(rest: list[str], known: dict[str, Path]) -> str:
    if not rest or rest[0] in SPEC_MODULES:  # the registry package and its spec-level modules
        return "protections.spec"
    package = known.get(f"hebench.protections.{rest[0]}")
    if package is not None and package.name == "__init__.py" and (len(rest) == 1 or rest[1] in SPEC_MODULES):
        return "protections.spec"  # a protection's package (importing its spec runs it) and its own spec
    if rest[0] in MODIFIERS and len(rest) > 1 and not rest[1].startswith("attacker"):
        return "protections.modifiers"
    return "protections.protocols"


def imports(path: Path, module: str, known: dict[str, Path]) -> list[Import]:
    """Every hebench import in ``path``: module-level, function-level and TYPE_CHECKING ones."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[Import] = []

    def target(name: str) -> str:
        while name not in known and "." in name:
            name = name.rpartition(".")[0]
        return name

    def add(name: str, line: int, runs: bool) -> None:
        if name.split(".")[0] != "hebench":
            return
        name = target(name)
        parts = name.split(".")
        for depth in range(2, len(parts)):  # a package outside the importer's own runs its __init__ first
            ancestor = ".".join(parts[:depth])
            if ancestor in known and not (module == ancestor or module.startswith(ancestor + ".")):
                found.append(Import(module, ancestor, line, runs, implicit=True))
        if name != module:
            found.append(Import(module, name, line, runs))

    def walk(nodes: list[ast.stmt], runs: bool) -> None:
        for node in nodes:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    add(alias.name, node.lineno, runs)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*up, *([node.module] if node.module else [])])
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    add(sub if sub in known else base, node.lineno, runs)
            elif isinstance(node, ast.If) and _is_type_checking(node.test):
                walk(node.body, False)
                walk(node.orelse, runs)
            else:
                for child in ast.iter_child_nodes(node):
                    if isinstance(child, ast.stmt):
                        walk([child], runs)
                    elif isinstance(child, ast.excepthandler):
                        walk(child.body, runs)

    walk(ast.parse(path.read_text()).body, True)
    return list(dict.fromkeys(found))  # ``from x import a, b``: one import of x


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def all_imports(root: Path = ROOT) -> list[Import]:
    known = modules(root)
    return [i for module, path in sorted(known.items()) for i in imports(path, module, known)]


def upward(found: list[Import], known: dict[str, Path]) -> list[Import]:
    """The imports whose target sits in a higher layer than their importer."""
    bad = []
    for i in found:
        if i.implicit:  # the explicit import beside it names the same unit
            continue
        source, target = unit(i.importer, known), unit(i.imported, known)
        if source is not None and target is not None and RANK[target] > RANK[source]:
            bad.append(i)
    return bad


def circles(found: list[Import]) -> list[list[str]]:
    """The import circles among modules (strongly connected components of two or more; Tarjan's algorithm)."""
    graph: dict[str, set[str]] = {}
    for i in found:
        if i.runs:
            graph.setdefault(i.importer, set()).add(i.imported)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:  # iterative DFS: the import graph is deeper than a comfortable recursion
        work = [(v, iter(sorted(graph.get(v, ()))))]
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _not_allowed(found: list[Import]) -> list[Import]:
    return [i for i in found if (i.importer, i.imported) not in ALLOWED]


def test_every_module_has_a_layer():
    known = modules()
    units = {unit(m, known) for m in known} - {None}
    assert units <= set(RANK), f"put these in a layer of LAYERS: {sorted(units - set(RANK))}"
    assert STATISTICS <= set(known), f"STATISTICS names modules that are gone: {sorted(STATISTICS - set(known))}"


def test_no_import_runs_up_a_layer():
    known = modules()
    bad = _not_allowed(upward(all_imports(), known))
    lines = [f"{i} ({unit(i.importer, known)} -> {unit(i.imported, known)})" for i in bad]
    assert not bad, "imports that run up a layer:\n" + "\n".join(lines)


def test_imports_form_no_circle():
    found = _not_allowed(all_imports())
    assert not circles(found), "import circles (break each by moving what both need below them):\n" + "\n".join(
        " <-> ".join(c) for c in circles(found)
    )


def test_config_imports_only_what_is_below_it():
    known = modules()
    found = [i for i in all_imports() if unit(i.importer, known) == "config"]
    bad = [
        i
        for i in found
        if unit(i.imported, known) not in {"config", *CONFIG_READS} and i.imported not in CONFIG_READS_MODULES
    ]
    assert not bad, "config reads only errors, the protections' spec level and crypto.registry:\n" + "\n".join(
        map(str, bad)
    )


def test_the_allow_list_holds_only_imports_that_still_exist():
    found = {(i.importer, i.imported) for i in all_imports()}
    stale = sorted(set(ALLOWED) - found)
    assert not stale, f"these are fixed: remove them from ALLOWED: {stale}"


def test_the_roles_place_protections_modules_as_the_layers_say():
    known = modules()
    assert unit("hebench.protections.registry", known) == "protections.spec"
    assert unit("hebench.protections.secagg", known) == "protections.spec"  # a protection's package
    assert unit("hebench.protections.selective.masks", known) == "protections.modifiers"
    assert unit("hebench.protections.dp.attacker_view", known) == "protections.protocols"
    assert unit("hebench.protections.secagg.server", known) == "protections.protocols"
    assert unit("hebench.analysis.success", known) == "statistics" and unit("hebench.analysis.pareto", known) == (
        "analysis"
    )
    assert RANK["protections.modifiers"] < RANK["fl"] < RANK["protections.protocols"]


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "hebench"
    for name, text in {"__init__.py": "", **files}.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_the_control_finds_an_upward_import(tmp_path):
    # the checker itself: a FedAvg-core module that imports the runner is caught, even inside a function
    root = _package(
        tmp_path,
        {
            "fl/__init__.py": "",
            "fl/party.py": "def start():\n    from hebench.runtime.runner import Runner\n",
            "runtime/__init__.py": "",
            "runtime/runner.py": "from hebench.fl.party import start\n",
        },
    )
    found = upward(all_imports(root), modules(root))
    assert [(i.importer, i.imported) for i in found] == [("hebench.fl.party", "hebench.runtime.runner")]


def test_the_control_finds_a_circle(tmp_path):
    # two modules of one unit, one importing the other at module level and the other lazily: a circle
    root = _package(
        tmp_path,
        {
            "net/__init__.py": "",
            "net/a.py": "from hebench.net.b import f\n",
            "net/b.py": "def f():\n    from hebench.net.a import g\n",
            "net/c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from hebench.net.d import h\n",
            "net/d.py": "from hebench.net.c import x\n",
        },
    )
    assert circles(all_imports(root)) == [["hebench.net.a", "hebench.net.b"]]  # c <-> d is typing only


def test_the_control_reads_a_package_import_as_running_its_init(tmp_path):
    root = _package(
        tmp_path,
        {
            "links/__init__.py": "from hebench.links.plan import p\n",
            "links/plan.py": "from hebench.faults.draw import d\n",
            "faults/__init__.py": "",
            "faults/draw.py": "import hebench.links\n",
        },
    )
    assert circles(all_imports(root)) == [["hebench.faults.draw", "hebench.links", "hebench.links.plan"]]


def test_parties_that_do_not_train_do_not_load_torch():
    code = "import sys, hebench.fl.aggregator, hebench.fl.key_authority;print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
