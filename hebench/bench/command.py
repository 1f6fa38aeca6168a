"""``python -m hebench.bench [NAME ...]``: run studies; each writes ``reports/bench/NAME.json`` with the environment.

Speed goals are checked by the studies as ratios measured in the same run, never in tests. With no NAME, the
default set runs (every study registered with ``default=True``); ``--list`` lists them all, one line each.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hebench.bench.registry import Option, Study, find, load_all, studies
from hebench.errors import HebenchError, ParameterError


def _dest(study: Study, option: Option) -> str:
    return f"opt__{study.name}__{option.param}"


def build_parser(known: dict[str, Study]) -> argparse.ArgumentParser:
    """The command's parser: study names, ``--list``, ``--out``, and every study's own options."""
    parser = argparse.ArgumentParser(
        prog="python -m hebench.bench", description=(__doc__ or "").split("\n\n")[0].replace("\n", " ")
    )
    parser.add_argument("names", nargs="*", metavar="NAME", help="studies to run (default: the default set)")
    parser.add_argument("--list", action="store_true", help="list the studies, one line each, and exit")
    parser.add_argument("--out", type=Path, default=Path("reports/bench"), help="folder of the JSON files")
    group = parser.add_argument_group("options of single studies")
    for study in known.values():
        for option in study.options:
            kwargs: dict[str, Any] = {
                "dest": _dest(study, option),
                "default": None,
                "help": f"{study.name}: {option.help}",
            }
            if option.parse is None:
                kwargs["action"] = "store_true"
            else:
                kwargs["metavar"] = "VALUE"
            try:
                group.add_argument(option.flag, **kwargs)
            except argparse.ArgumentError as err:
                raise HebenchError(f"study '{study.name}' declares {option.flag} again: {err}", "rename it") from None
    return parser


def plan(args: argparse.Namespace, known: dict[str, Study]) -> list[tuple[Study, dict[str, Any]]]:
    """The studies to run, in the order named (default set: by name), each with its keyword arguments."""
    names = args.names or sorted(name for name, study in known.items() if study.default)
    chosen = [find(name) for name in dict.fromkeys(names)]
    picked = {study.name for study in chosen}
    for study in known.values():
        for option in study.options:
            if getattr(args, _dest(study, option)) is not None and study.name not in picked:
                raise ParameterError(
                    f"{option.flag} is an option of the study '{study.name}', which this command does not run",
                    f"add {study.name} to the studies named, or drop {option.flag}",
                )
    todo = []
    for study in chosen:
        kwargs = {}
        for option in study.options:
            given = getattr(args, _dest(study, option))
            if given is not None:
                kwargs[option.param] = True if option.parse is None else option.parse(given)
        todo.append((study, kwargs))
    return todo


def run_study(study: Study, kwargs: dict[str, Any], out: Path) -> Path:
    """Run one study and write ``out/NAME.json``: its result with the environment captured just before."""
    from hebench.measure.environment import capture

    environment = capture()
    result = study.run(**kwargs)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{study.name}.json"
    path.write_text(json.dumps({"environment": environment, **result}, indent=2))
    return path


def list_lines(known: dict[str, Study], broken: dict[str, str]) -> list[str]:
    """``--list``: one line per study (name, help, options, whether it is in the default set), then any module
    that could not be imported here."""
    width = max((len(name) for name in known), default=0)
    lines = []
    for name in sorted(known):
        study = known[name]
        extra = "" if study.default else "  [not in the default set]"
        if study.options:
            extra += "  (options: " + ", ".join(option.flag for option in study.options) + ")"
        lines.append(f"{name:<{width}}  {study.help}{extra}")
    lines += [f"cannot import {module} here: {reason}" for module, reason in sorted(broken.items())]
    return lines


def _broken_note(broken: dict[str, str]) -> str:
    return "; ".join(f"{module} cannot be imported here ({reason})" for module, reason in sorted(broken.items()))


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point (prints progress lines; a typed error becomes one ``error:``/``fix:`` pair and its exit code)."""
    try:
        broken = load_all()
        known = studies()
        args = build_parser(known).parse_intermixed_args(argv)
        if args.list:
            print("\n".join(list_lines(known, broken)))
            return
        if broken and not args.names:
            raise HebenchError(
                f"the default set cannot run: {_broken_note(broken)}",
                "install what those modules need (e.g. pip install 'hebench[flower]'), or name the studies to run",
            )
        try:
            todo = plan(args, known)
        except ParameterError as err:
            if broken and "no study is named" in err.problem:
                raise ParameterError(err.problem, f"{err.fix}; {_broken_note(broken)}") from None
            raise
        for index, (study, kwargs) in enumerate(todo, 1):
            tag = f"[{index}/{len(todo)}] {study.name}"
            print(f"{tag}: running", flush=True)
            start = time.monotonic()
            path = run_study(study, kwargs, args.out)
            print(f"{tag}: wrote {path} in {time.monotonic() - start:.0f} s", flush=True)
    except HebenchError as err:
        print(f"error: {err.problem}", file=sys.stderr)
        if err.fix:
            print(f"fix: {err.fix}", file=sys.stderr)
        sys.exit(err.exit_code)
