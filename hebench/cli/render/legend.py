"""Configuration labels in narrow tables: whole when they fit, else short keys (#1, #2…) with a legend."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console

MAX_LABEL = 20  # columns a label may take in an 80-column table


def label_keys(labels: Sequence[str], width: int = MAX_LABEL) -> dict[str, str]:
    """Label → what the table shows: the label itself when every label fits ``width``, else ``#i``."""
    if all(len(label) <= width for label in labels):
        return {label: label for label in labels}
    return {label: f"#{i}" for i, label in enumerate(labels, 1)}


def print_legend(console: Console, keys: dict[str, str]) -> None:
    """One line per key (nothing when the labels are shown whole); never wrapped inside a label."""
    if any(key != label for label, key in keys.items()):
        console.print("configurations:")
    for label, key in keys.items():
        if key != label:
            console.print(f"  {key:>3}  {label}", soft_wrap=True, highlight=False, markup=False)
