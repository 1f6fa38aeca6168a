"""Every relative link in README.md and docs/*.md points to a file that exists, and to a heading it has."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
HTML_ID = re.compile(r"""<a\s+(?:name|id)=["']([^"']+)["']""")


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _prose(text: str) -> list[str]:
    """The lines outside fenced code blocks, with inline code spans blanked (a link there is not a link)."""
    lines, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            lines.append("")
            continue
        lines.append("" if fenced else re.sub(r"`[^`]*`", "``", line))
    return lines


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading keeps its text
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every anchor a Markdown page offers: its headings' slugs (repeats numbered) and explicit ids."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    fenced = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        found.update(HTML_ID.findall(line))
        match = HEADING.match(line)
        if match:
            base = slug(match.group(2))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
    return found


def broken_links(page: Path) -> list[str]:
    """``page:line target (why)`` for each relative link of a page that does not resolve."""
    broken = []
    for number, line in enumerate(_prose(page.read_text(encoding="utf-8")), start=1):
        for target in LINK.findall(line):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE):  # http:, https:, mailto:
                continue
            path_part, _, anchor = target.partition("#")
            dest = (page.parent / path_part).resolve() if path_part else page
            where = f"{page.relative_to(ROOT) if page.is_relative_to(ROOT) else page.name}:{number} {target}"
            if not dest.exists():
                broken.append(f"{where} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                broken.append(f"{where} (no heading with that anchor in {dest.name})")
    return broken


def test_every_relative_link_in_the_readme_and_docs_resolves():
    broken = [b for page in pages() for b in broken_links(page)]
    assert not broken, "links that do not resolve:\n" + "\n".join(broken)


def test_the_checker_finds_a_missing_file_and_a_missing_anchor(tmp_path):
    (tmp_path / "other.md").write_text("# A title\n\n## Costs (`mode: offload`)\n\n## Costs (`mode: offload`)\n")
    page = tmp_path / "page.md"
    page.write_text(
        "[ok](other.md#costs-mode-offload) [ok too](other.md#costs-mode-offload-1) [self](#here)\n"
        "## Here\n"
        "[gone](missing.md) [bad anchor](other.md#nowhere) `[in code](missing-too.md)`\n"
        "```\n[in a fence](missing-three.md)\n```\n"
    )
    assert [b.split(" ", 1)[1] for b in broken_links(page)] == [
        "missing.md (no such file)",
        "other.md#nowhere (no heading with that anchor in other.md)",
    ]


def test_slugs_follow_githubs_rule():
    assert slug("Flower (`--engine flower`)") == "flower---engine-flower"
    assert slug("Measured (2-core, 24 GiB machine; digits, MLP hidden 16)") == (
        "measured-2-core-24-gib-machine-digits-mlp-hidden-16"
    )
    assert slug("A first suite: `suites/quickstart.yaml`") == "a-first-suite-suitesquickstartyaml"
