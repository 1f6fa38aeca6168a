"""Keeping an update inside an adapter's value range without ending the run or damaging it silently.

The compact adapters (``seal-bfv``, ``seal-ckks``) quantise values in ``[-clip, clip]`` and refuse one
beyond it, and a model's weights grow as it trains: a BatchNorm weight starts at 1.0, and a run at
``clip: 1`` died. Two measures, applied by each client to its own update before it is encrypted (the
fixed-point adapters, whose default range is wide, still refuse):

1. **Per-tensor scales from the global model.** At the start of each round every client holds the same
   global model (the same aggregate, decrypted, or the seeded initial model). For each parameter tensor
   it takes the smallest power of two ``s >= 1`` with ``max |w| <= s * clip / 2`` over that tensor of
   the global model, divides the tensor's values by ``s`` before encryption and multiplies the decrypted
   aggregate by ``s``. All clients derive the same scales from the same model, so the sums stay
   consistent with no message exchanged; powers of two make the scaling exact in floating point. A
   scaled tensor is quantised ``s`` times coarser: the round's largest ``s`` is recorded
   (``range_scale_max``), and the stated precision holds times that factor.
2. **Saturation, counted.** A value still beyond ``clip`` (a tensor that more than doubled in one
   round) is set to ``±clip``, and the count is recorded in the client's round record
   (``clipped_values``). Above ``max_clipped`` (a share of the encrypted values; an adapter parameter,
   default 1e-4) the round fails with the count and the fix.

What the aggregator learns: nothing more. The scales are never sent (each client derives them from a
model the aggregator does not hold in HE modes), the count stays in the client's own record, and the
ciphertexts have the same sizes.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from torch import nn

from hebench.config import Configuration
from hebench.crypto.registry import adapter_class
from hebench.errors import PartyError, PrecisionError
from hebench.models.shared import shared_tensors

MARGIN = 2.0  # a tensor is scaled once its global max exceeds clip / MARGIN: room to double in one round


@dataclass(frozen=True)
class ValueRange:
    """An adapter's range: values in ``[-clip, clip]``; up to ``max_clipped`` of them may saturate (a share)."""

    clip: float
    max_clipped: float

    @classmethod
    def of(cls, config: Configuration) -> ValueRange | None:
        """The range of ``config``'s adapter, or None when it has none (CKKS, plain)."""
        if config.spec.plain_adapter:
            return None
        params = adapter_class(config.adapter).params_type.parse(config.adapter, config.adapter_params)
        if not hasattr(params, "max_clipped"):  # fixed-point adapters keep refusing out-of-range values
            return None
        return cls(float(params.clip), float(params.max_clipped))

    def fit(self, model: nn.Module) -> RangeFit:
        """This round's scales, from the global model the client holds at the round's start."""
        sizes, scales = [], []
        for _, p in shared_tensors(model):
            low, high = p.detach().aminmax() if p.numel() else (p.new_zeros(()), p.new_zeros(()))
            scales.append(self._scale(max(-float(low), float(high))))
            sizes.append(p.numel())
        return RangeFit(self, sizes, scales)

    def fit_vector(self, vector: np.ndarray, sizes: list[int]) -> RangeFit:
        """The same scales as :meth:`fit`, from the global model as an update-order vector cut into the tensors'
        ``sizes`` (a Flower node holds the global model as a vector)."""
        if sum(sizes) != len(vector):
            raise PartyError(
                f"tensor sizes add to {sum(sizes)}, but the global model holds {len(vector)} values",
                "every party must build the suite's model (the same hebench version and suite)",
            )
        scales, offset = [], 0
        for n in sizes:
            part = vector[offset : offset + n]
            scales.append(self._scale(max(-float(part.min()), float(part.max())) if n else 0.0))
            offset += n
        return RangeFit(self, list(sizes), scales)

    def _scale(self, peak: float) -> float:
        """The smallest power of two ``s >= 1`` with ``peak <= s * clip / MARGIN``."""
        need = peak * MARGIN / self.clip
        return 1.0 if need <= 1.0 else float(2 ** math.ceil(math.log2(need)))


@dataclass(frozen=True)
class RangeFit:
    """One round's per-tensor scales (update order)."""

    range: ValueRange
    sizes: list[int]
    scales: list[float]

    @property
    def largest(self) -> float:
        return max(self.scales, default=1.0)

    def _segments(self) -> list[tuple[int, int, float]]:
        out, offset = [], 0
        for n, s in zip(self.sizes, self.scales, strict=True):
            if s != 1.0:
                out.append((offset, offset + n, s))
            offset += n
        return out

    def scaled(self, vector: np.ndarray, in_place: bool = False) -> np.ndarray:
        """``vector`` with each tensor divided by its scale: ``vector`` itself when all are 1 or ``in_place``, else a
        new array (the caller's may still be read elsewhere, as the runner's oracle copy is)."""
        segments = self._segments()
        if not segments:
            return vector
        out = vector if in_place else np.array(vector, dtype=np.float32)
        for start, stop, s in segments:
            out[start:stop] *= np.float32(1.0 / s)
        return out

    def restore(self, vector: np.ndarray) -> None:
        """Undo :meth:`scaled` on a decrypted aggregate, in place."""
        for start, stop, s in self._segments():
            vector[start:stop] *= np.float32(s)

    def saturate(self, values: np.ndarray, in_place: bool = False) -> tuple[np.ndarray, int]:
        """(``values`` within ``±clip``, how many were set to ``±clip``): ``values`` itself when none were or
        ``in_place``, else a new array. Checked and clipped in blocks, so no model-sized temporary is made.

        Raises :class:`PrecisionError` when more than ``max_clipped`` of them were out of range.
        """
        clip = self.range.clip
        over = sum(int(np.count_nonzero(np.abs(values[a:b]) > clip)) for a, b in _blocks(len(values)))
        if not over:
            return values, 0
        allowed = self.range.max_clipped * len(values)
        if over > allowed:
            raise PrecisionError(
                f"{over} of {len(values)} values ({over / len(values):.2%}) lie beyond the range clip = {clip:g} after "
                f"per-tensor scaling, above the {self.range.max_clipped:g} share allowed to saturate",
                "raise the adapter's 'clip' (`hebench tune` proposes one for the model), or its max_clipped",
            )
        out = values if in_place else np.empty_like(values)
        for a, b in _blocks(len(values)):
            np.clip(values[a:b], -clip, clip, out=out[a:b])
        return out, over


BLOCK_VALUES = 1 << 20  # values checked at a time: 4 MB of float32 scratch, whatever the model


def _blocks(length: int) -> Iterator[tuple[int, int]]:
    for start in range(0, length, BLOCK_VALUES):
        yield start, min(length, start + BLOCK_VALUES)
