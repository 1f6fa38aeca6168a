"""A text-leakage campaign written as typed records: what ``hebench run`` (after a language-model suite's runs, into
the run's ``results.jsonl``) and ``hebench attack`` (a suite or run folder, into ``text-attacks.jsonl``) both write.

``text_attack``: one victim batch of one view (the private and the recovered token ids, outcome, typed reason,
scores); ``text_attack_summary``: one configuration, view and victim batch size over its batches (outcomes, pooled
scores with Wilson intervals, a few recovered sequences beside the originals, decoded).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

from hebench.errors import ParameterError
from hebench.inversion.text.campaign import attack_views
from hebench.inversion.text.sources import TextSource
from hebench.results.records import Record, TextAttackRecord, TextAttackSummaryRecord

ATTACKS = ("span", "optimisation")


def attack_of(name: str) -> Callable[..., Any] | None:
    """The text attack ``name`` names (None: the exact span attack, the campaign's default)."""
    if name in ("span", "dlg"):  # dlg: `hebench attack`'s image default, not given: the exact attack
        return None
    if name == "optimisation":
        from hebench.inversion.text.baseline import optimisation_attack

        return optimisation_attack
    raise ParameterError(f"--attack {name} does not attack text", f"use one of {', '.join(ATTACKS)}")


@dataclass(frozen=True)
class TextCampaign:
    """What a recorded text-leakage campaign gave: its summaries, the configurations it skipped, its wall time."""

    summaries: tuple[TextAttackSummaryRecord, ...]
    notes: tuple[str, ...]
    wall_s: float


def record_text_attacks(
    source: TextSource,
    batch_sizes: Sequence[int],
    batches: int,
    attack: str,
    write: Callable[[Record], Any],
    mask_sources: Sequence[str] | None = None,
    done: Collection[tuple[str, str, int]] = (),
) -> TextCampaign:
    """Attack every view of ``source``'s configurations at each victim batch size; each record handed to ``write``
    as it is made (a victim batch's, then its view's summary); ``mask_sources``: a selective sensitivity mask's
    (None: the suite's ``text_leakage`` block's); ``done``: the (configuration, view, batch size) summarised
    before, not attacked again."""
    started = time.perf_counter()
    name = "span" if attack == "dlg" else attack
    chosen = attack_of(attack)
    out: list[TextAttackSummaryRecord] = []

    def on_summary(summary: dict[str, Any]) -> None:
        record = TextAttackSummaryRecord.from_json({"attack": name, **summary}, strict=True)
        written = write(record)
        out.append(written if isinstance(written, TextAttackSummaryRecord) else record)

    _, notes = attack_views(
        source.suite,
        source.models,
        source.blocks,
        source.decode,
        list(batch_sizes),
        batches,
        chosen,
        on_record=lambda r: write(TextAttackRecord.from_json(r, strict=True)),
        on_summary=on_summary,
        mask_sources=mask_sources,
        done=done,
    )
    return TextCampaign(tuple(out), tuple(notes), time.perf_counter() - started)
