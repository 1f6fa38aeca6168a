"""``hebench attack`` on a language-model suite or run folder: every configuration's views attacked for text.

The views are rebuilt from the suite (or the suite the run ran, with the run's tokenizer and models) through the
protections' own code (:mod:`hebench.inversion.text.campaign`); the records (per victim batch: recovered and
original token ids, scores) go to ``text-attacks.jsonl`` and the summaries to ``text-attacks.json`` in the
output folder.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from pathlib import Path
from typing import Any

from hebench.errors import ParameterError

ATTACKS = ("span", "optimisation")


def _attack(name: str) -> Any:
    if name in ("span", "dlg"):  # dlg: the command's image default, not given: the exact attack
        return None
    if name == "optimisation":
        from hebench.inversion.text.baseline import optimisation_attack

        return optimisation_attack
    raise ParameterError(f"--attack {name} does not attack text", f"use one of {', '.join(ATTACKS)}")


def run_text_attack(
    target: Path,
    overrides: list[str],
    batch_sizes: list[int] | None,
    batches: int,
    attack_name: str,
    out: Path | None,
) -> dict[str, Any]:
    """Attack a language-model suite (``overrides``: ``--set``) or run folder; the summaries and where they went."""
    from hebench.inversion.text.campaign import attack_views
    from hebench.inversion.text.sources import is_text_run, run_source, suite_source

    started = time.perf_counter()
    if is_text_run(target):
        if overrides:
            raise ParameterError("--set would change what the run's aggregators saw", "attack the run as it ran")
        source = run_source(target)
        out = out or target / f"text-attack-{dt.datetime.now():%Y%m%d-%H%M%S}"
    else:
        from hebench.config import load_suite

        source = suite_source(load_suite(target, overrides), str(target))
        out = out or Path("results/text-attack")
    sizes = batch_sizes or [source.suite.training.batch_size]
    out.mkdir(parents=True, exist_ok=True)
    with (out / "text-attacks.jsonl").open("w", encoding="utf-8") as records:
        summaries, notes = attack_views(
            source.suite,
            source.models,
            source.blocks,
            source.decode,
            sizes,
            batches,
            _attack(attack_name),
            on_record=lambda r: records.write(json.dumps(r) + "\n"),
        )
    result = {
        "origin": source.origin,
        "out": str(out),
        "attack": "span" if attack_name == "dlg" else attack_name,
        "batch_sizes": sizes,
        "batches": batches,
        "notes": notes,
        "wall_s": time.perf_counter() - started,
        "summaries": summaries,
    }
    (out / "text-attacks.json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return result


def is_text_target(target: Path, overrides: list[str]) -> bool:
    """A language-model run folder, or a suite file whose model is a decoder on text."""
    from hebench.inversion.text.sources import is_text_run, is_text_suite

    if target.is_dir():
        return is_text_run(target)
    if target.suffix not in (".yaml", ".yml") or not target.is_file():
        return False
    from hebench.config import load_suite

    return is_text_suite(load_suite(target, overrides))
