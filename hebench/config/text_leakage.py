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


def text_leakage_shorthand(value: object) -> object:
    """``text_leakage: false`` (YAML ``off``) / ``true`` as the block ``{enabled: ...}``; anything else but a block
    refused in words."""
    if isinstance(value, bool):
        return {"enabled": value}
    if value is not None and not isinstance(value, (Mapping, TextLeakageSpec)):
        raise ValueError(
            f"text_leakage is true, false or a block {{enabled, attack, batch_sizes, batches}}, got {value!r:.40}: "
            "write e.g. text_leakage: false, or text_leakage: {batch_sizes: [1, 2]}"
        )
    return value
