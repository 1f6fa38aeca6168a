"""The former entry point, kept as an alias: ``python -m hebench.bench.suite --only a,b [OPTIONS]`` runs
``python -m hebench.bench a b [OPTIONS]`` (earlier notes and measurements cite it)."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from hebench.bench.command import main as bench_main


def translate(argv: Sequence[str]) -> list[str]:
    """``--only a,b`` (or ``--only=a,b``) becomes the names ``a b``; every other argument passes through."""
    names: list[str] = []
    rest: list[str] = []
    items = iter(argv)
    for arg in items:
        if arg == "--only":
            names += next(items, "").split(",")
        elif arg.startswith("--only="):
            names += arg.partition("=")[2].split(",")
        else:
            rest.append(arg)
    return [name for name in names if name] + rest


def main(argv: Sequence[str] | None = None) -> None:
    bench_main(translate(sys.argv[1:] if argv is None else argv))


if __name__ == "__main__":
    main()
