"""An optimisation baseline (TAG, Deng et al. 2021; LAMP, Balunovic et al., NeurIPS 2022): soft tokens whose update
matches the observed one.

The adversary optimises, for ``restarts`` independent tries at once, a distribution over the vocabulary at every
position of every sequence: logits ``Z`` of shape ``(restarts, batch, length, V)``. The soft tokens
``p = softmax(Z)`` enter the model as embeddings ``p @ wte`` and are their own next-token targets (a decoder
trains on its input), so the dummy's update is the gradient of the soft next-token loss, a function of ``Z``;
its distance to the observed update (cosine, LAMP's; L2; or TAG's L2 + L1), over the coordinates the view holds,
is minimised with Adam. LAMP's language-model prior is optional (``prior``: that weight times the model's own
next-token loss on the soft tokens; LAMP uses a separate GPT-2). Each restart keeps its own loss; the best restart
is decoded by argmax. One local step is assumed (an update of several steps is matched as one gradient).
Decoders only.

``engine`` picks how the restarts' objective is evaluated: ``batched`` (default) in one vmapped pass
(:mod:`.baseline_batch`), ``serial`` one restart after another (:mod:`.baseline_serial`); both start from the same
logits and compute the same losses. ``device``: ``auto`` runs on CUDA when a GPU is usable, else the CPU.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Literal

import torch

from hebench.errors import ParameterError
from hebench.inversion.devices import resolve_device
from hebench.inversion.text.anatomy import Decoder, anatomy_of
from hebench.inversion.text.baseline_batch import BatchedObjective
from hebench.inversion.text.baseline_matching import DISTANCES, Distance, eager_twin, name_of, targets_of
from hebench.inversion.text.baseline_serial import SerialObjective
from hebench.inversion.text.observation import TextObservation
from hebench.inversion.text.result import RecoveredSequence, TextReconstruction, Why, failed

NAME = "optimisation"
Engine = Literal["serial", "batched"]
ENGINES: tuple[Engine, ...] = ("serial", "batched")
DEVICES = ("auto", "cpu", "cuda")


@dataclass(frozen=True)
class BaselineConfig:
    restarts: int = 4
    steps: int = 200
    lr: float = 0.1
    distance: Distance = "cosine"
    tag_l1: float = 0.01  # TAG's L1 weight
    prior: float = 0.0  # LAMP's language-model prior weight (0: none)
    seed: int = 0
    engine: Engine = "batched"
    device: str = "auto"  # auto: CUDA when a GPU is usable, else the CPU

    def __post_init__(self) -> None:
        if self.engine not in ENGINES:
            raise ParameterError(f"unknown baseline engine '{self.engine}'", f"choose one of {', '.join(ENGINES)}")
        if self.device not in DEVICES:
            raise ParameterError(f"unknown device '{self.device}'", f"choose one of {', '.join(DEVICES)}")
        if self.distance not in DISTANCES:
            raise ParameterError(f"unknown distance '{self.distance}'", f"choose one of {', '.join(DISTANCES)}")
        if self.restarts < 1 or self.steps < 0:
            raise ParameterError(
                f"restarts {self.restarts}, steps {self.steps}", "give at least 1 restart and 0 or more steps"
            )


def _device(name: str) -> torch.device:
    chosen = resolve_device(name)
    if chosen == "cuda" and not torch.cuda.is_available():
        raise ParameterError(
            "the baseline was asked to run on CUDA and no GPU is usable here", "use device auto or cpu"
        )
    return torch.device(chosen)


def optimisation_attack(obs: TextObservation, cfg: BaselineConfig = BaselineConfig()) -> TextReconstruction:
    """Soft-token gradient matching; the best restart's argmax tokens."""
    started = time.perf_counter()
    if obs.update is None:
        return failed(NAME, Why.NOTHING_OBSERVED, f"the {obs.view} view holds no update: nothing to attack")
    if not isinstance(anatomy_of(obs.model), Decoder):
        raise ParameterError("the optimisation baseline attacks decoders", "use the span attack on encoders")
    device = _device(cfg.device)
    model = eager_twin(obs.model, device)
    anatomy = anatomy_of(model)
    targets = targets_of(obs, model, device)
    if targets.empty:
        return failed(NAME, Why.NOTHING_OBSERVED, "the view holds no coordinate of the model's trainable tensors")
    wte = anatomy.net.wte.weight  # type: ignore[union-attr]
    objective = (
        BatchedObjective(model, name_of(model, wte), targets, cfg.distance, cfg.tag_l1, cfg.prior)
        if cfg.engine == "batched"
        else SerialObjective(model, wte, targets, cfg.distance, cfg.tag_l1, cfg.prior)
    )
    batch, length, vocab = max(obs.batch_size, 1), obs.length, wte.shape[0]
    gen = torch.Generator().manual_seed(cfg.seed)
    start = torch.randn((cfg.restarts, batch, length, vocab), generator=gen)  # drawn on the CPU: the same anywhere
    logits = start.to(device).requires_grad_(True)
    opt = torch.optim.Adam([logits], lr=cfg.lr)
    best = torch.full((cfg.restarts,), math.inf, device=device)
    kept = logits.detach().clone()
    looped, done, finite = time.perf_counter(), 0, True
    for _ in range(cfg.steps):
        total, grad = objective(logits.detach())
        if grad is None:  # a loss is not finite: stop where the restarts were
            finite = False
            break
        better = total < best
        best = torch.where(better, total, best)
        kept[better] = logits.detach()[better]
        logits.grad = grad
        opt.step()
        done += 1
    loop_s = time.perf_counter() - looped
    if not finite and not bool(torch.isfinite(best).any()):
        return failed(NAME, Why.NO_MATCH, "the matching objective was not finite")
    winner = int(best.argmin())
    tokens = kept[winner].argmax(-1).cpu()
    sequences = tuple(RecoveredSequence(tuple(int(t) for t in row), ()) for row in tokens)
    diagnostics = {
        "restart_losses": [float(b) for b in best.cpu()],
        "best_restart": winner,
        "distance": cfg.distance,
        "steps": cfg.steps,
        "steps_done": done,
        "engine": cfg.engine,
        "device": str(device),
        "seconds_per_step": loop_s / done if done else None,
        "seconds": time.perf_counter() - started,
    }
    return TextReconstruction(NAME, "recovered", sequences, (), None, "", diagnostics)
