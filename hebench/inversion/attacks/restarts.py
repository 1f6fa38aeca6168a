"""A batch of restarts: observations that share one model (and its threat model), each restart with its own
start, labels, target upload and mask, and the per-restart objective evaluated for any subset of them in one
``vmap``-ed pass (:class:`BatchObjective`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch.func import grad_and_value, vmap

from hebench.inversion.attacks.dummies import start_images, start_labels
from hebench.inversion.attacks.matching import DISTANCES, total_variation
from hebench.inversion.attacks.upload import functional_upload
from hebench.inversion.views.observation import Observation


@dataclass
class RestartBatch:
    """Restarts of ``observations`` (restart r attacks ``observations[which[r]]``), all with hard labels or all
    with soft dummy labels."""

    observations: list[Observation]
    which: torch.Tensor  # (R,) observation of each restart
    x0: torch.Tensor  # (R, images, C, H, W) the starts
    labels: torch.Tensor  # (R, images) hard labels, or (R, images, classes) soft dummies to optimise
    sources: list[str]  # label_source per restart

    @property
    def soft(self) -> bool:
        return self.labels.is_floating_point()

    @property
    def size(self) -> int:
        return len(self.which)


def restart_batches(
    observations: Sequence[Observation], seeds: Sequence[int], init: str, known_label: bool
) -> list[tuple[list[int], RestartBatch]]:
    """The restarts ``(observations[i], seeds[i])`` (every observation with gradients), drawn as the serial
    engine draws them, in one batch per label kind; each batch with the positions it holds."""
    kinds: dict[bool, list[tuple[int, torch.Tensor, torch.Tensor, str]]] = {}
    for i, (obs, seed) in enumerate(zip(observations, seeds, strict=True)):
        if obs.gradients is None:  # nothing to match: the attack's prior, not a restart
            continue
        gen = torch.Generator().manual_seed(seed)
        x = start_images(obs, init, gen)
        y, source = start_labels(obs, known_label, gen)
        kinds.setdefault(y.is_floating_point(), []).append((i, x, y, source))
    out = []
    for rows in kinds.values():
        distinct: dict[int, int] = {}
        for i, *_ in rows:
            distinct.setdefault(id(observations[i]), len(distinct))
        unique = list({id(observations[i]): observations[i] for i, *_ in rows}.values())
        which = torch.tensor([distinct[id(observations[i])] for i, *_ in rows])
        dev, dtype = _where(unique[0])
        batch = RestartBatch(
            unique,
            which.to(dev),
            torch.stack([x for _, x, _, _ in rows]).to(dev, dtype),
            _labels([y for _, _, y, _ in rows], dev, dtype),
            [s for *_, s in rows],
        )
        out.append(([i for i, *_ in rows], batch))
    return out


def _labels(ys: list[torch.Tensor], dev: torch.device, dtype: torch.dtype) -> torch.Tensor:
    stacked = torch.stack(ys)
    return stacked.to(dev, dtype) if stacked.is_floating_point() else stacked.to(dev)


def _where(obs: Observation) -> tuple[torch.device, torch.dtype]:
    assert obs.gradients is not None
    return obs.gradients[0].device, obs.gradients[0].dtype


class BatchObjective:
    """Each restart's gradient-matching loss (plus ``tv`` × total variation) and its gradient in the dummy
    (and soft label), for the restarts ``rows`` of a batch in one pass."""

    def __init__(self, batch: RestartBatch, distance: str, tv: float = 0.0) -> None:
        first = batch.observations[0]
        upload = functional_upload(first.model, first.local, first.clients, first.batch_size)
        match_fn = DISTANCES[distance]
        self.which = batch.which
        shared = len(batch.observations) == 1
        stacked = [o.gradients for o in batch.observations]
        self.targets = tuple(torch.stack(ts) for ts in zip(*stacked, strict=True))  # type: ignore[arg-type]
        masked = first.masks is not None
        self.masks = (
            tuple(torch.stack(ms) for ms in zip(*[o.masks for o in batch.observations], strict=True))  # type: ignore[arg-type]
            if masked
            else None
        )
        self.shared = shared

        def objective(
            x: torch.Tensor, y: torch.Tensor, target: tuple[torch.Tensor, ...], mask: tuple[torch.Tensor, ...] | None
        ) -> tuple[torch.Tensor, torch.Tensor]:
            match = match_fn(upload(x, y), target, mask)
            loss = match + tv * total_variation(x) if tv else match
            return loss, match

        argnums = (0, 1) if batch.soft else 0
        per = None if shared else 0
        self._fn = vmap(
            grad_and_value(objective, argnums=argnums, has_aux=True),
            in_dims=(0, 0, per, per if masked else None),
        )
        self.soft = batch.soft

    def __call__(
        self, x: torch.Tensor, y: torch.Tensor, rows: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """(loss, match, ∂loss/∂x, ∂loss/∂y or None) of restarts ``rows`` at dummies ``x`` and labels ``y``."""
        if self.shared:
            target = tuple(t[0] for t in self.targets)
            mask = None if self.masks is None else tuple(m[0] for m in self.masks)
        else:
            which = self.which[rows]
            target = tuple(t[which] for t in self.targets)
            mask = None if self.masks is None else tuple(m[which] for m in self.masks)
        grads, (loss, match) = self._fn(x, y, target, mask)
        if self.soft:
            gx, gy = grads
            return loss, match, gx, gy
        return loss, match, grads, None
