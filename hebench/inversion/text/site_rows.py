"""An attention input projection's observed gradient as rows in (a map of) the projection's input space.

- Full fine-tuning: the weight's gradient; its rows, seen in the input space (GPT-2 stores ``(in, out)``: the
  columns), span the layer's inputs when fewer inputs than the width are behind it.
- LoRA (``W + s B A``, ``A`` r x in, ``B`` out x r): ``dL/dA = s B^T dY^T X`` has its r rows in the inputs' span,
  but only r of them: they span all of it only when fewer than r inputs are behind the update (rank below r).
  At LoRA's initialisation ``B = 0``, so ``dL/dA = 0``; then ``dL/dB = s dY^T X A^T``, whose rows lie in the span
  of the inputs' images ``A x_i`` in R^r: a test there, with ``A`` known to the adversary (it sent the model), again
  needs fewer than r inputs. With the base frozen, the first layer's inputs never change during local steps, so
  ``dA`` summed over steps is still exactly in their span; ``dB`` of later steps is not (``A`` moves).
- Coordinates the view hides (selective encryption; the adversary knows the mask): the rows seen in full on the
  input coordinates seen most often still lie in the inputs' span, projected on those coordinates, and the test
  runs there (exact); only when too few rows or coordinates are seen in full are the hidden ones filled by
  low-rank completion (:mod:`.completion`) at the protocol's bound.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from hebench.inversion.text.anatomy import Site
from hebench.inversion.text.completion import complete
from hebench.inversion.text.observation import TextObservation


@dataclass(frozen=True)
class SiteRows:
    rows: torch.Tensor  # (n, m) float64
    coords: torch.Tensor | None  # (m, d): an input's coordinates in the rows' space; None: the input itself
    source: str  # weight | lora_A | lora_B
    limit: int  # a span of this rank or more is not the inputs' span
    limit_reason: str  # what reaching the limit means, in words
    diagnostics: dict[str, Any]


@dataclass(frozen=True)
class Seen:
    rows: torch.Tensor  # (n, m') float64: rows in the input space (or the adapter's), restricted to ``keep``
    keep: torch.Tensor | None  # the input coordinates kept (None: all)
    info: dict[str, Any]


def restrict(visible: torch.Tensor, need: int) -> tuple[torch.Tensor, torch.Tensor] | None:
    """Rows fully visible on a set of columns, both at least ``need`` (dropping the most hidden columns first);
    None when no such pair exists. Returns (rows, columns) as index tensors."""
    hidden = (~visible).sum(0)
    order = hidden.argsort(descending=True)  # the most hidden columns first
    best: tuple[int, int] | None = None
    for drop in range(visible.shape[1] - need + 1):
        keep = order[drop:]
        rows = int(visible[:, keep].all(1).sum())
        if rows >= need and (best is None or min(rows, len(keep)) > best[1]):
            best = (drop, min(rows, len(keep)))
        if hidden[order[drop]] == 0:
            break
    if best is None:
        return None
    keep = order[best[0] :].sort().values
    return torch.nonzero(visible[:, keep].all(1)).flatten(), keep


def _seen(obs: TextObservation, name: str, transposed: bool, bound: int) -> Seen | None:
    """The tensor ``name`` as rows in the input space. Hidden coordinates: the rows fully seen on the input
    coordinates most often seen (exact: seen rows lie in the inputs' span, projected), else low-rank completion."""
    found = obs.tensor(name)
    if found is None:
        return None
    values, mask = found
    matrix = values.detach().to(torch.float64)
    matrix = matrix.T if transposed else matrix
    if mask is None:
        return Seen(matrix, None, {"visible": 1.0})
    visible = (mask.T if transposed else mask).bool()
    share = float(visible.double().mean())
    picked = restrict(visible, bound + 1)
    if picked is not None:
        rows, keep = picked
        info = {"visible": share, "seen_rows": len(rows), "seen_coordinates": len(keep), "method": "seen-rows"}
        return Seen(matrix[rows][:, keep], keep, info)
    done = complete(matrix, visible, bound)
    return Seen(done.matrix, None, {"visible": share, "method": "completion", **done.diagnostics()})


def _coords(base: torch.Tensor | None, keep: torch.Tensor | None, width: int) -> torch.Tensor | None:
    if keep is None:
        return base
    full = torch.eye(width, dtype=torch.float64, device=keep.device) if base is None else base
    return full[keep]


def site_rows(obs: TextObservation, site: Site) -> list[SiteRows]:
    """The observed readings of ``site`` (none: the view holds none of its tensors, or they are zero): the weight's
    gradient; or, for an adapter, ``dA`` and ``dB`` both (the caller keeps the one whose spectrum drops more: after
    steps from ``B = 0``, ``dA`` is tiny beside ``A``'s round-off while ``A`` has barely moved under ``dB``)."""
    bound = obs.tokens_bound
    if site.weight is not None:
        seen = _seen(obs, site.weight, site.transposed, bound)
        if seen is not None:
            limit = site.span_dim if seen.keep is None else min(site.span_dim, len(seen.keep))
            what = (
                f"the {site.span_dim} dimensions its inputs can span (width {site.width})"
                if seen.keep is None
                else f"the {limit} coordinates seen"
            )
            coords = _coords(None, seen.keep, site.width)
            return [SiteRows(seen.rows, coords, "weight", limit, what, {"name": site.weight, **seen.info})]
    if site.lora_a is None or site.lora_b is None or site.adapter is None:
        return []
    r = int(site.adapter.shape[0])
    readings = []
    for source, name in (("lora_A", site.lora_a), ("lora_B", site.lora_b)):
        seen = _seen(obs, name, False, bound)
        if seen is None or not bool(seen.rows.abs().max() > 0):
            continue
        base = None if source == "lora_A" else site.adapter.to(torch.float64)
        coords = _coords(base, seen.keep, site.width if source == "lora_A" else r)
        limit = r if seen.keep is None else min(r, len(seen.keep))
        info = {"name": name, "adapter_rank": r, **seen.info}
        readings.append(SiteRows(seen.rows, coords, source, limit, f"the adapter's rank r = {r}", info))
    return readings
