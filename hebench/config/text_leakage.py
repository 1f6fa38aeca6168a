"""The ``text_leakage:`` block of a language-model suite: after its configurations ran, ``hebench run`` attacks
each configuration's views for text (the exact span attack by default; :mod:`hebench.inversion.text.campaign`),
as ``hebench attack RUN`` does. On by default; ``text_leakage: false`` (or ``{enabled: false}``) turns it off."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Literal

from pydantic import Field

from hebench.config.base import Frozen


class TextLeakageSpec(Frozen):
    """How a language-model suite's views are attacked for text after its runs."""

    enabled: bool = True
    attack: Literal["span", "optimisation"] = "span"  # optimisation: the TAG/LAMP-style baseline (slow on CPU)
    # victim batch sizes, in blocks: one block is the exact attack's best case (the fewest inputs behind the span)
    batch_sizes: tuple[Annotated[int, Field(ge=1, le=128)], ...] = Field((1,), min_length=1)
    batches: int = Field(1, ge=1, le=64)  # victim batches per batch size (sequences scored: batches x batch size)
    # whose data a selective sensitivity mask is made from: global (every client's map summed, as the run agrees
    # its mask: the default), local (the victim's own map), sample (the attacked batch's); one view per source
    mask_sources: tuple[Literal["sample", "local", "global"], ...] = Field(("global",), min_length=1)


def text_leakage_shorthand(value: object) -> object:
    """``text_leakage: false`` (YAML ``off``) / ``true`` as the block ``{enabled: ...}``; anything else but a block
    refused in words."""
    if isinstance(value, bool):
        return {"enabled": value}
    if value is not None and not isinstance(value, (Mapping, TextLeakageSpec)):
        raise ValueError(
            "text_leakage is true, false or a block {enabled, attack, batch_sizes, batches, mask_sources}, "
            f"got {value!r:.40}: "
            "write e.g. text_leakage: false, or text_leakage: {batch_sizes: [1, 2]}"
        )
    return value
