"""Message kinds come from one enum (hebench.net.messages.MessageKind): no bare string names a kind in hebench/.

A string literal fails this test where it is the kind of a :class:`hebench.net.transport.Message` (its first
argument or ``kind=``), what a channel's ``recv`` expects, compared with a ``.kind``, a ``match`` case on one,
or a key of a dict looked up by one. The wire is unchanged: members are ``StrEnum``s.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator
from pathlib import Path

from hebench.net.messages import MessageKind
from hebench.net.transport import Message, decode, encode

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "hebench"
ENUM = PACKAGE / "net" / "messages.py"


def _message_names(tree: ast.Module) -> set[str]:
    """The names hebench's Message goes by in a module (``Message``, ``WireMessage``...)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "hebench.net.transport":
            names |= {alias.asname or alias.name for alias in node.names if alias.name == "Message"}
        elif isinstance(node, ast.ClassDef) and node.name == "Message":  # hebench.net.transport itself
            names.add("Message")
    return names


def _strings(node: ast.AST | None) -> list[ast.Constant]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [e for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return []


def _is_kind(node: ast.AST) -> bool:
    """``something.kind``: a message's kind."""
    return isinstance(node, ast.Attribute) and node.attr == "kind"


def bare_kinds(source: str) -> Iterator[tuple[int, str, str]]:
    """(line, string, where) for each bare string used as a message kind in ``source``."""
    tree = ast.parse(source)
    messages = _message_names(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            if name in messages:
                first = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "kind"), None)
                for s in _strings(first):
                    yield s.lineno, s.value, "a Message's kind"
            elif name == "recv" and isinstance(func, ast.Attribute):
                expected = (
                    node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "expect"), None)
                )
                for s in _strings(expected):
                    yield s.lineno, s.value, "the kind recv expects"
        elif isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(_is_kind(o) for o in operands):
                for operand in operands:
                    for s in _strings(operand):
                        yield s.lineno, s.value, "compared with a .kind"
        elif isinstance(node, ast.Match) and _is_kind(node.subject):
            for case in node.cases:
                for pattern in ast.walk(case.pattern):
                    if isinstance(pattern, ast.MatchValue):
                        for s in _strings(pattern.value):
                            yield s.lineno, s.value, "a match case on a .kind"
        elif isinstance(node, ast.Subscript) and isinstance(node.value, ast.Dict) and _is_kind(node.slice):
            for key in node.value.keys:
                for s in _strings(key):
                    yield s.lineno, s.value, "a key of a dict looked up by a .kind"


def test_no_bare_string_names_a_message_kind():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == ENUM:
            continue
        for line, value, where in bare_kinds(path.read_text()):
            found.append(f"{path.relative_to(ROOT)}:{line}: '{value}' as {where}")
    assert not found, "use hebench.net.messages.MessageKind:\n" + "\n".join(found)


def test_control_each_bare_kind_is_caught():
    source = """
from hebench.net.transport import Message as WireMessage
from flwr.common import Message
channel.send(WireMessage("sa_keys", {}))
channel.send(WireMessage(kind="done"))
hello = channel.recv("hello")
if msg.kind == "leave": pass
if msg.kind in ("update_chunk", "plain_part"): pass
match msg.kind:
    case "keys": pass
handler = {"train": train, "map": agree}[msg.kind]
reply = Message(content, reply_to=msg)
"""
    caught = {(line, value) for line, value, _ in bare_kinds(source)}
    assert caught == {
        (4, "sa_keys"),
        (5, "done"),
        (6, "hello"),
        (7, "leave"),
        (8, "update_chunk"),
        (8, "plain_part"),
        (10, "keys"),
        (11, "train"),
        (11, "map"),
    }


def test_control_enum_members_are_not_bare():
    source = """
from hebench.net.messages import MessageKind
from hebench.net.transport import Message
channel.send(Message(MessageKind.SA_KEYS, {"epoch": 1}))
if msg.kind in (MessageKind.UPDATE_CHUNK, MessageKind.PLAIN_PART): pass
if msg.meta.get("kind") == "party_error": pass
"""
    assert list(bare_kinds(source)) == []


def test_the_wire_carries_the_same_strings():
    frame = encode(Message(MessageKind.SA_KEYS, {"round": 1}, (b"x",)))
    n = int.from_bytes(frame[:4], "big")
    assert json.loads(frame[4 : 4 + n])["kind"] == "sa_keys"
    back = decode(frame)
    assert back.kind == MessageKind.SA_KEYS and back.kind == "sa_keys" and back.parts == (b"x",)


def test_kinds_are_distinct_wire_strings():
    values = [kind.value for kind in MessageKind]
    assert len(values) == len(set(values)) and all(v == v.lower() and " " not in v for v in values)
