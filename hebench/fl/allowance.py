"""What a party that decrypts for others may open: one aggregate per round of the run, of the model's length.

An offload engine decrypts for its host, decryptor-he's decryptor for the clients. Neither can tell an aggregate
from one client's ciphertext, so neither can stop an aggregator that colludes with a client from handing it one
victim's upload as "the aggregate"; what each can bound is how much it opens: at most one aggregate per round of
the run (rounds in order, each once), of at most the model's length (the encrypted part of a selective update),
so never several uploads glued into one "aggregate", and never more rounds than the run has. The round a request
names comes from the aggregator, so colluders may spend a later round's aggregate early; in all they open no more
than one aggregate per round of the run.

The :class:`Allowance` comes from the runtime (the trusted set-up, which knows the model) and reaches a
long-lived engine with its key sets, from the key authority only; :class:`Decryptions` counts against it.
"""

from __future__ import annotations

import math
import threading
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from hebench.errors import PartyError

if TYPE_CHECKING:  # the runtime computes an allowance (with torch); the parties only read it
    from hebench.config import Configuration, Suite

MAP_ROUND = -1  # selective encryption's mask agreement, before the first training round


@dataclass(frozen=True)
class Allowance:
    """Rounds ``[first, end)`` of a run, at most ``values`` values decrypted in each (``map_values`` in the mask
    agreement, round -1; 0: the configuration has none)."""

    first: int
    end: int
    values: int
    map_values: int = 0

    def limit(self, round_index: int) -> int:
        """The values round ``round_index`` may open (0: none, a round outside the run)."""
        if round_index == MAP_ROUND:
            return self.map_values
        return self.values if self.first <= round_index < self.end else 0

    @property
    def total(self) -> int:
        """The values the whole run may open."""
        return max(0, self.end - self.first) * self.values + self.map_values

    def to_json(self) -> dict[str, int]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Any) -> Allowance:
        try:
            fields = {k: int(data[k]) for k in ("first", "end", "values")}
            return cls(**fields, map_values=int(data.get("map_values", 0)))
        except (KeyError, TypeError, ValueError, AttributeError):
            raise PartyError("a key delivery carried a malformed decryption allowance", "same hebench?") from None


class Decryptions:
    """What one decrypting party opened for one run (and one host), against its :class:`Allowance`."""

    def __init__(self, allowance: Allowance, who: str = "this party") -> None:
        self.allowance, self.who = allowance, who
        self.round: int | None = None  # the round being opened
        self.in_round = 0  # values opened in it so far
        self.opened = 0  # values opened in the run
        self._lock = threading.Lock()

    def admit(self, round_index: int | None, values: int) -> None:
        """Count ``values`` about to be decrypted in ``round_index`` (None: a request that names no round counts
        against the run's total only); PartyError, before anything is decrypted, where it would open more than one
        aggregate of the model's length in that round, a round already closed, or more than the run allows."""
        allowance, used = self.allowance, 0
        with self._lock:
            if round_index is not None:
                limit = allowance.limit(round_index)
                if limit == 0:
                    raise self._refusal(f"round {round_index}, which this run does not have")
                if self.round is not None and round_index < self.round:
                    raise self._refusal(f"round {round_index} again, after round {self.round}")
                used = self.in_round if round_index == self.round else 0
                if used + values > limit:
                    raise self._refusal(
                        f"{used + values} values in round {round_index}: more than one aggregate ({limit} values)"
                    )
            if self.opened + values > allowance.total:
                raise self._refusal(f"{self.opened + values} values in all, above the run's {allowance.total}")
            if round_index is not None:
                self.round, self.in_round = round_index, used + values
            self.opened += values

    def _refusal(self, what: str) -> PartyError:
        return PartyError(
            f"{self.who} refused to decrypt {what}",
            "it opens one aggregate of the model's length per round of the run, no more",
        )


def allowance_for(
    suite: Suite, config: Configuration, input_shape: tuple[int, ...], num_classes: int, start_round: int
) -> Allowance:
    """A configuration's allowance, from its model (built on torch's meta device: shapes only) and rounds."""
    import torch

    from hebench.models import build_model, parameter_count

    with torch.device("meta"):
        model = build_model(suite.model.name, input_shape, num_classes, suite.model.hidden)
    length = parameter_count(model)
    values, map_values = length, 0
    spec = config.selective
    if spec is not None:
        if spec.needs_agreement:
            values, map_values = math.ceil(spec.ratio * length), length
        else:
            from hebench.protections.selective.agreement import mask_from

            values = int(mask_from(spec, model, None).sum())
    return Allowance(start_round, suite.training.rounds, values, map_values)
