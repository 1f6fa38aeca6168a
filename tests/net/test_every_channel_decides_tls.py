"""``transport: tls`` covers every channel only if no call site opens one without deciding: every door
(``listen``, ``Door``) and every dial (``connect``, ``dial``) outside ``hebench/net`` names its ``tls``
(None where the channel has none). A share holder's door once took the default and sent shares in the clear."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "hebench"
OPENERS = {"hebench.net.transport": {"listen", "Door", "connect"}, "hebench.net.stream": {"dial"}}


def _undecided(path: Path, root: Path = ROOT.parent) -> list[str]:
    tree = ast.parse(path.read_text())
    names = {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module in OPENERS
        for alias in node.names
        if alias.name in OPENERS[node.module]
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in names:
            if not any(keyword.arg == "tls" for keyword in node.keywords):
                found.append(f"{path.relative_to(root)}:{node.lineno} {node.func.id}(…) names no tls=")
    return found


def test_every_channel_outside_the_transport_names_its_tls():
    sites = [p for p in sorted(ROOT.rglob("*.py")) if "net" not in p.relative_to(ROOT).parts[:1]]
    undecided = [line for path in sites for line in _undecided(path)]
    assert not undecided, "\n".join(undecided)


def test_the_check_sees_a_call_that_names_no_tls(tmp_path):
    sample = tmp_path / "share_holder.py"  # what the share holder's door looked like
    sample.write_text("from hebench.net.transport import listen\n\nlisten(b'key')\nlisten(b'key', tls=None)\n")
    assert _undecided(sample, tmp_path) == ["share_holder.py:3 listen(…) names no tls="]
