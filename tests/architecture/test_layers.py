"""hebench's packages form layers; no module imports a layer above its own (function-level imports included)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "hebench"

# lowest first; a package may import its own layer and the layers below
LAYERS: tuple[frozenset[str], ...] = (
    frozenset({"errors", "modes", "measure", "crypto", "suite", "results", "data", "models", "links", "faults"}),
    frozenset({"net", "selective"}),  # networking; selective masks
    frozenset({"fl"}),  # party parts: transport users, meter, keys, update, FedAvg, local model, party roles
    frozenset({"offload"}),  # engines, the offload link and cipher
    frozenset({"inversion"}),  # attacks on what the aggregator saw
    frozenset({"runtime", "flower"}),  # run suites: the runner, the local and Flower runtimes
    frozenset({"report", "bench"}),
    frozenset({"cli"}),
)
RANK = {name: i for i, layer in enumerate(LAYERS) for name in layer}


def _unit(module: str) -> str | None:
    """The layered unit of ``hebench.x.y`` (``x``), or None for the root package."""
    parts = module.split(".")
    return parts[1] if parts[0] == "hebench" and len(parts) > 1 else None


def _imports(path: Path) -> list[tuple[str, int]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.module, node.lineno))
        elif isinstance(node, ast.Import):
            found.extend((alias.name, node.lineno) for alias in node.names)
    return found


def test_every_package_has_a_layer():
    units = {p.stem if p.is_file() else p.name for p in ROOT.iterdir() if p.suffix == ".py" or p.is_dir()}
    units -= {"__init__", "__main__", "__pycache__"}
    assert units <= set(RANK), f"put these in a layer: {sorted(units - set(RANK))}"


def test_no_import_runs_up_a_layer():
    upward = []
    for path in sorted(ROOT.rglob("*.py")):
        unit = _unit(".".join(("hebench", *path.relative_to(ROOT).with_suffix("").parts)))
        if unit is None or unit not in RANK:
            continue
        for module, line in _imports(path):
            target = _unit(module)
            if target is not None and target in RANK and RANK[target] > RANK[unit]:
                upward.append(f"{path.relative_to(ROOT.parent)}:{line} {unit} -> {target}")
    assert not upward, "imports that run up a layer:\n" + "\n".join(upward)


def test_the_control_finds_an_upward_import(tmp_path):
    # the checker itself: a party-layer module that imports the runner is caught
    bad = tmp_path / "bad.py"
    bad.write_text("from hebench.runtime.runner import Runner\n")
    assert [m for m, _ in _imports(bad) if RANK[_unit(m)] > RANK["fl"]] == ["hebench.runtime.runner"]


def test_parties_that_do_not_train_do_not_load_torch():
    code = "import sys, hebench.fl.aggregator, hebench.fl.key_authority;print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
