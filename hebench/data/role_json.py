"""Clients' text as LEAF-style JSON: ``{"users": [...], "num_samples": [...], "user_data": {role: {"train": [...],
"test": [...]}}}``, one speech per list entry (the shipped Shakespeare sample's format)."""

from __future__ import annotations

import json
from pathlib import Path

from hebench.data.roles import RoleText
from hebench.errors import DatasetError


def write_role_json(clients: tuple[RoleText, ...], path: Path) -> Path:
    """Write ``clients`` to ``path`` (sorted keys, UTF-8, one stable byte layout for a checksum)."""
    doc = {
        "users": [c.role for c in clients],
        "num_samples": [len(c.train) for c in clients],
        "user_data": {c.role: {"train": list(c.train), "test": list(c.test)} for c in clients},
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, ensure_ascii=False, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return path


def read_role_json(path: Path) -> tuple[RoleText, ...]:
    """The clients in ``path``, in its ``users`` order."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
        return tuple(
            RoleText(role, tuple(doc["user_data"][role]["train"]), tuple(doc["user_data"][role]["test"]))
            for role in doc["users"]
        )
    except (OSError, json.JSONDecodeError, KeyError, TypeError) as err:
        raise DatasetError(f"{path} is not role JSON: {err}", "pass a file written by write_role_json") from None
