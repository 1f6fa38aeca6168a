"""What a text attack returns: token sequences with their diagnostics, or the reason it could not recover them.

An attack never raises for an assumption that does not hold: it returns :class:`TextReconstruction` with
``outcome`` ``failed`` (nothing recovered) or ``partial`` (tokens by position, or fewer sequences than it
found evidence for), ``reason`` the typed cause and ``why`` the numbers behind it in words.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal

Outcome = Literal["recovered", "partial", "failed"]


class Why(StrEnum):
    NOTHING_OBSERVED = "nothing-observed"  # the view holds no update (encrypted, absent)
    LAYER_NOT_OBSERVED = "layer-not-observed"  # the projection's tensors are not in the view, or all hidden
    ZERO_GRADIENT = "zero-gradient"  # the tensors are there but zero
    SPAN_FULL = "span-full"  # the rows' rank reaches the width: inputs >= width, noise, or drift over steps
    ADAPTER_RANK = "adapter-rank"  # a LoRA gradient's rank reaches the adapter's rank r
    COMPLETION_FAILED = "completion-failed"  # hidden coordinates could not be filled
    TOO_LONG = "too-long"  # sequences longer than the model's positions
    NO_TOKENS = "no-tokens"  # no vocabulary entry passed the first layer's test
    ORDER_UNAVAILABLE = "order-unavailable"  # the second layer cannot order the tokens: tokens by position only
    NO_SEQUENCES = "no-sequences"  # tokens found, but no sequence passed the second layer's test
    INCOMPLETE = "incomplete"  # sequences found, fewer or shorter than the evidence says
    NO_MATCH = "no-match"  # the optimisation baseline's objective was not finite


@dataclass(frozen=True)
class RecoveredSequence:
    tokens: tuple[int, ...]
    residuals: tuple[float, ...]  # the second layer's span distance at each position (0: exactly in the span)

    @property
    def worst(self) -> float:
        return max(self.residuals, default=float("nan"))


@dataclass(frozen=True)
class TextReconstruction:
    attack: str
    outcome: Outcome
    sequences: tuple[RecoveredSequence, ...] = ()
    tokens_by_position: tuple[tuple[int, ...], ...] = ()  # the first layer's tokens at each position
    reason: Why | None = None
    why: str = ""
    diagnostics: dict[str, Any] = field(default_factory=dict)

    @property
    def token_lists(self) -> list[list[int]]:
        return [list(s.tokens) for s in self.sequences]

    @property
    def token_bag(self) -> list[int]:
        """Every token the attack claims (sequences' tokens; the tokens by position when it has no sequences)."""
        if self.sequences:
            return [t for s in self.sequences for t in s.tokens]
        return [t for position in self.tokens_by_position for t in position]


def failed(attack: str, reason: Why, why: str, **diagnostics: Any) -> TextReconstruction:
    return TextReconstruction(attack, "failed", reason=reason, why=why, diagnostics=diagnostics)
