"""Which fields of two stored suites differ (dotted paths), for combined reports and ``compare``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def suite_differences(a: Any, b: Any, prefix: str = "") -> list[str]:
    """Dotted paths where ``a`` and ``b`` differ; a list that differs is named whole (``configurations``)."""
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        out: list[str] = []
        for key in sorted(set(a) | set(b), key=str):
            out += suite_differences(a.get(key), b.get(key), f"{prefix}.{key}" if prefix else str(key))
        return out
    return [] if a == b else [prefix or "(the whole suite)"]
