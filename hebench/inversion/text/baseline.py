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
Decoders only; the tensors are laid out ``(restarts, batch, length, ...)`` for a batched engine, the restarts
looped here.
"""

from __future__ import annotations

import copy
import math
import time
from dataclasses import dataclass
from typing import Literal

import torch

from hebench.errors import ParameterError
from hebench.inversion.text.anatomy import Decoder, anatomy_of
from hebench.inversion.text.observation import TextObservation
from hebench.inversion.text.result import RecoveredSequence, TextReconstruction, Why, failed

NAME = "optimisation"
Distance = Literal["cosine", "l2", "tag"]


@dataclass(frozen=True)
class BaselineConfig:
    restarts: int = 4
    steps: int = 200
    lr: float = 0.1
    distance: Distance = "cosine"
    tag_l1: float = 0.01  # TAG's L1 weight
    prior: float = 0.0  # LAMP's language-model prior weight (0: none)
    seed: int = 0


def _targets(obs: TextObservation, model: torch.nn.Module) -> tuple[list[torch.Tensor], torch.Tensor, torch.Tensor]:
    """The parameters matched, the observed values (flat, float32) and the visible mask (flat)."""
    assert obs.update is not None
    named = dict(model.named_parameters())
    params, values, masks = [], [], []
    for name in obs.update:
        seen = obs.tensor(name)
        if name not in named or seen is None:
            continue
        value, mask = seen
        params.append(named[name])
        values.append(value.detach().reshape(-1).float())
        masks.append(torch.ones(value.numel(), dtype=torch.bool) if mask is None else mask.reshape(-1).bool())
    return params, torch.cat(values), torch.cat(masks)


def _distance(kind: Distance, dummy: torch.Tensor, observed: torch.Tensor, l1: float) -> torch.Tensor:
    if kind == "cosine":
        return 1 - (dummy @ observed) / (dummy.norm() * observed.norm()).clamp_min(1e-30)
    diff = dummy - observed
    l2 = (diff * diff).sum()
    return l2 if kind == "l2" else l2 + l1 * diff.abs().sum()


def _eager(model: torch.nn.Module) -> torch.nn.Module:
    """The adversary's copy of the model with plain (eager) attention: matching differentiates the model's
    gradient, and the fused CPU attention has no second derivative."""
    twin = copy.deepcopy(model)
    inner = twin.get_base_model() if hasattr(twin, "get_base_model") else twin
    inner.config._attn_implementation = "eager"
    return twin


def optimisation_attack(obs: TextObservation, cfg: BaselineConfig = BaselineConfig()) -> TextReconstruction:
    """Soft-token gradient matching; the best restart's argmax tokens."""
    started = time.perf_counter()
    if obs.update is None:
        return failed(NAME, Why.NOTHING_OBSERVED, f"the {obs.view} view holds no update: nothing to attack")
    anatomy = anatomy_of(obs.model)
    if not isinstance(anatomy, Decoder):
        raise ParameterError("the optimisation baseline attacks decoders", "use the span attack on encoders")
    model = _eager(obs.model)
    anatomy = anatomy_of(model)
    params, observed, mask = _targets(obs, model)
    if not params or not bool(mask.any()):
        return failed(NAME, Why.NOTHING_OBSERVED, "the view holds no coordinate of the model's trainable tensors")
    observed = observed[mask]
    wte = anatomy.net.wte.weight  # type: ignore[union-attr]
    batch, length, vocab = max(obs.batch_size, 1), obs.length, wte.shape[0]
    gen = torch.Generator().manual_seed(cfg.seed)
    logits = torch.randn((cfg.restarts, batch, length, vocab), generator=gen).requires_grad_(True)
    opt = torch.optim.Adam([logits], lr=cfg.lr)
    best = torch.full((cfg.restarts,), math.inf)
    kept = logits.detach().clone()
    finite = True
    for _ in range(cfg.steps):
        opt.zero_grad()
        losses = []
        for r in range(cfg.restarts):
            soft = logits[r].softmax(-1)  # (batch, length, V)
            out = model(inputs_embeds=soft @ wte).logits
            lm = -(soft[:, 1:] * out[:, :-1].log_softmax(-1)).sum(-1).mean()
            grads = torch.autograd.grad(lm, params, create_graph=True, allow_unused=True)
            flat = torch.cat(
                [(torch.zeros_like(p) if g is None else g).reshape(-1) for p, g in zip(params, grads, strict=True)]
            )
            losses.append(_distance(cfg.distance, flat[mask], observed, cfg.tag_l1) + cfg.prior * lm)
        total = torch.stack(losses)
        if not bool(torch.isfinite(total).all()):
            finite = False
            break
        better = total.detach() < best
        best = torch.where(better, total.detach(), best)
        kept[better] = logits.detach()[better]
        total.sum().backward()
        opt.step()
    if not finite and not bool(torch.isfinite(best).any()):
        return failed(NAME, Why.NO_MATCH, "the matching objective was not finite")
    winner = int(best.argmin())
    tokens = kept[winner].argmax(-1)
    sequences = tuple(RecoveredSequence(tuple(int(t) for t in row), ()) for row in tokens)
    diagnostics = {
        "restart_losses": [float(b) for b in best],
        "best_restart": winner,
        "distance": cfg.distance,
        "steps": cfg.steps,
        "seconds": time.perf_counter() - started,
    }
    return TextReconstruction(NAME, "recovered", sequences, (), None, "", diagnostics)
