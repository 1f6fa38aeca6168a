"""Speeches by speaker from play text laid out as ``NAME:`` blocks (tiny shakespeare's layout).

Each block, separated from the next by a blank line, is a speaker line ``NAME:`` followed by that
speaker's lines; a speech is the block's lines after the speaker line, joined with newlines. A line
that ends with a colon inside a speech is verse, not a speaker: only a block's first line names one.
"""

from __future__ import annotations

import re

from hebench.errors import DatasetError

Speeches = dict[str, list[str]]  # speaker -> speeches in the order they are spoken

SPEAKER = re.compile(r"[A-Za-z][A-Za-z' .,&-]*")
BLANK_LINE = re.compile(r"\n[ \t]*\n")


def read_speaker_blocks(text: str) -> Speeches:
    """Every speaker's speeches, in order of first appearance; blocks without a speaker line are skipped."""
    speeches: Speeches = {}
    for block in BLANK_LINE.split(text):
        head, _, body = block.strip("\n").partition("\n")
        name = head.strip()[:-1] if head.strip().endswith(":") else ""
        if SPEAKER.fullmatch(name) and body.strip():
            speeches.setdefault(name, []).append(body.rstrip())
    if not speeches:
        raise DatasetError(
            "no speeches found: expected blocks of a 'NAME:' line followed by that speaker's lines",
            "pass tiny shakespeare's input.txt (or text in its layout)",
        )
    return speeches
