"""``hebench attack`` on a language-model suite or run folder: every configuration's views attacked for text.

The views are rebuilt from the suite (or the suite the run ran, with the run's tokenizer and models) through the
protections' own code (:mod:`hebench.inversion.text.campaign`); the records (per victim batch: recovered and
original token ids, scores: ``text_attack`` records) and the summaries (``text_attack_summary`` records) go to
``text-attacks.jsonl``, the records ``hebench run`` writes into a language-model run's ``results.jsonl``, and the
summaries also to ``text-attacks.json`` in the output folder.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from hebench.errors import ParameterError


def run_text_attack(
    target: Path,
    overrides: list[str],
    batch_sizes: list[int] | None,
    batches: int | None,
    attack_name: str | None,
    out: Path | None,
    mask_sources: list[str] | None = None,
) -> dict[str, Any]:
    """Attack a language-model suite (``overrides``: ``--set``) or run folder; the summaries and where they went.
    What is not given (batch sizes, batches, attack, mask sources) comes from the suite's ``text_leakage`` block,
    as ``hebench run`` attacks."""
    from hebench.config.text_leakage import TextLeakageSpec
    from hebench.inversion.text.campaign import check_mask_sources
    from hebench.inversion.text.recorded import attack_of, record_text_attacks
    from hebench.inversion.text.sources import is_text_run, run_source, suite_source
    from hebench.results import ResultWriter

    if attack_name is not None:
        attack_of(attack_name)  # an attack that is not a text attack fails before any work
    if mask_sources is not None:
        check_mask_sources(mask_sources)  # so does an unknown mask source
    if is_text_run(target):
        if overrides:
            raise ParameterError("--set would change what the run's aggregators saw", "attack the run as it ran")
        source = run_source(target)
        out = out or target / f"text-attack-{dt.datetime.now():%Y%m%d-%H%M%S}"
    else:
        from hebench.config import load_suite

        source = suite_source(load_suite(target, overrides), str(target))
        out = out or Path("results/text-attack")
    spec = source.suite.text_leakage or TextLeakageSpec()  # turned off for `hebench run`, still asked for here
    sizes = batch_sizes or list(spec.batch_sizes)
    batches = batches or spec.batches
    sources = list(check_mask_sources(mask_sources or spec.mask_sources))
    attack = spec.attack if attack_name is None else ("span" if attack_name == "dlg" else attack_name)
    out.mkdir(parents=True, exist_ok=True)
    records = out / "text-attacks.jsonl"
    if records.exists():
        records.unlink()  # this attack's records only (the summary JSON beside it is rewritten too)
    with ResultWriter(records) as writer:
        campaign = record_text_attacks(source, sizes, batches, attack, writer.write, sources)
    result = {
        "origin": source.origin,
        "out": str(out),
        "attack": attack,
        "batch_sizes": sizes,
        "batches": batches,
        "mask_sources": sources,
        "notes": list(campaign.notes),
        "wall_s": campaign.wall_s,
        "summaries": [s.to_json() for s in campaign.summaries],
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
