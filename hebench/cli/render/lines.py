"""Notes and verdicts in the terminal: ``label: text`` wrapped at the console's width between entries, never
inside one ("host-he/tenseal-ckks 5" stays on one line), continuation lines indented.

Configurations are named by their labels in every line, as the report names them; the tables' short keys
(``#2``, :mod:`hebench.cli.render.legend`) stay in the tables, so no list mixes keys and names.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Sequence

from rich.console import Console
from rich.text import Text

INDENT = "      "  # continuation lines of a note or verdict
NBSP = "\u00a0"


def wrapped(text: str, width: int, first: str = "") -> list[str]:
    """Lines of at most ``width`` columns (a word longer than that stays whole), breaking only between entries:
    a label and the number after it ("raw 5") stay together, and continuation lines are indented."""
    glued = text.replace(" ± ", f"{NBSP}±{NBSP}")
    glued = re.sub(r"(?<=\S) (?=[(]?[\d.]+(?:\s?%)?[),:;]?(?:\s|$))", NBSP, glued)
    lines = textwrap.wrap(
        first + glued,
        width=max(width, 20),
        subsequent_indent=INDENT,
        break_long_words=False,
        break_on_hyphens=False,
    )
    return [line.replace(NBSP, " ") for line in lines]


def print_lines(console: Console, label: str, style: str, lines: Sequence[str]) -> None:
    """Each line as ``label: text`` (``- text`` without a label) wrapped at the console's width, ``label:`` in
    ``style``."""
    for line in lines:
        out = wrapped(line, console.width, f"{label}: " if label else "- ")
        for i, piece in enumerate(out):
            text = Text(piece)
            if i == 0 and label:
                text.stylize(style, 0, len(label) + 1)
            console.print(text, soft_wrap=True, highlight=False)
