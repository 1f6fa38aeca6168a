"""Speeches by (play, role) from Project Gutenberg's Complete Works of Shakespeare (eBook #100), LEAF's source.

LEAF's Shakespeare benchmark (Caldas et al., 2018) makes each role of each play a client. This reader
follows the same layout rules, written here from the edition's layout (the 2011 posting LEAF's
preprocessing names, md5 ``036d0f9c…``): a play starts at a ``by William Shakespeare`` line, its title
the nearest non-blank line above; a speech starts with an indented ``NAME. text`` line and goes on
over the lines indented two spaces deeper. The Comedy of Errors is set two spaces to the left in that
edition: the indentation is read per play. Names are upper-cased (the edition spells some two ways);
sections with fewer than two roles (the sonnets, the poems) are dropped; lines indented far deeper
than speech (centred stage directions) are left out of speeches; the copyright notices between
``<<`` and ``>>`` end a speech. Later Gutenberg editions lay speakers out differently: this reader
does not parse them (a :class:`DatasetError` says so).
"""

from __future__ import annotations

import re
from itertools import pairwise

from hebench.errors import DatasetError

PlaySpeeches = dict[tuple[str, str], list[str]]  # (play title, ROLE) -> speeches in order

PLAY_MARK = "by William Shakespeare"
END_MARK = "End of the Project Gutenberg"
SPEECH = re.compile(r"^( *)([A-Za-z][A-Za-z ]*)\. (.*)$")
DIRECTION_DEPTH = 10  # a line this many spaces deeper than the speaker line is a centred stage direction


def _title(lines: list[str], at: int) -> str:
    for back in range(2, 8):
        if at - back >= 0 and lines[at - back].strip():
            return lines[at - back].strip()
    raise DatasetError(f"no play title above line {at + 1}", "pass the Gutenberg edition LEAF uses (see the card)")


def _sections(lines: list[str]) -> list[tuple[str, list[str]]]:
    """(title, lines) of every section that starts with a ``by William Shakespeare`` line."""
    starts = [i for i, line in enumerate(lines) if line.strip() == PLAY_MARK]
    end = next((i for i, line in enumerate(lines) if line.startswith(END_MARK)), len(lines))
    bounds = [*starts, end]
    return [(_title(lines, s), lines[s + 1 : e]) for s, e in pairwise(bounds) if s < end]


def _speaker_indent(lines: list[str]) -> int:
    """The indentation of this play's speaker lines (2 in the edition, 0 in its Comedy of Errors)."""
    indents = [len(m.group(1)) for line in lines if (m := SPEECH.match(line))]
    return 0 if indents.count(0) > indents.count(2) else 2


def _play_speeches(lines: list[str]) -> dict[str, list[str]]:
    indent = _speaker_indent(lines)
    roles: dict[str, list[str]] = {}
    current: list[str] | None = None
    in_notice = False
    for line in lines:
        if line.startswith("<<"):
            in_notice, current = True, None
        if in_notice:
            in_notice = ">>" not in line
            continue
        match = SPEECH.match(line)
        if match and len(match.group(1)) == indent and not match.group(2).upper().startswith(("ACT ", "SCENE")):
            current = [match.group(3).rstrip()]
            roles.setdefault(match.group(2).strip().upper(), []).append(current)  # type: ignore[arg-type]
            continue
        depth = len(line) - len(line.lstrip(" "))
        if current is not None and line.strip() and indent + 2 <= depth < indent + DIRECTION_DEPTH:
            current.append(line.strip())
        elif current is not None and line.strip() and depth < indent + 2:
            current = None  # a heading or stage direction at the margin ends the speech
    return {role: ["\n".join(s) for s in speeches] for role, speeches in roles.items()}  # type: ignore[misc]


def read_complete_works(text: str) -> PlaySpeeches:
    """Every (play, role)'s speeches; sections with fewer than two roles are dropped."""
    lines = text.splitlines()
    out: PlaySpeeches = {}
    for title, body in _sections(lines):
        roles = _play_speeches(body)
        if len(roles) > 1:
            out.update({(title, role): speeches for role, speeches in roles.items()})
    if not out:
        raise DatasetError(
            "no plays found in this text: expected Gutenberg eBook #100's 2011 layout ('  NAME. text' lines)",
            "pass the edition the card names (`hebench datasets fetch shakespeare`), or use data.sample",
        )
    return out


def client_name(play: str, role: str) -> str:
    """A filesystem-safe client id for a role of a play, as LEAF names its users (``PLAY_ROLE``)."""
    return re.sub(r"\W+", "_", f"{play}_{role}".replace(" ", "_"))
