"""The attacks behind one signature: ``reconstruct(observation, cfg, seed) -> Reconstruction``.

- ``dlg`` (Zhu et al., 2019): L-BFGS (lr 1) on dummy data and a soft dummy label,
  squared gradient distance.
- ``idlg`` (Zhao et al., 2020): the label from the last layer's gradient, then DLG on the data.
- ``inverting-gradients`` (Geiping et al., 2020): cosine distance + total variation,
  Adam on signed gradients, boxed to the image range, step decay (breaching's settings).
- ``imprint`` (Fowl et al., 2022, "Robbing the Fed"): a malicious server plants trap
  weights at the model's input (:mod:`hebench.inversion.attacks.imprint`); the images are read
  out of the block's gradient rows, no optimisation.

Labels: a recipe with ``known_label`` infers the label of a single image
(iDLG); for more images behind the observation (batch > 1, or N clients) it is
given the true labels (``Observation.labels``), as Geiping et al. assume for
batches; ``dlg`` always optimises soft labels. ``label_source`` says which.

The dummy's upload is simulated as the victim computed it: one gradient, or E
local SGD steps per client, averaged over the clients. Every attack checks
finiteness at each step and keeps its best iterate by its own gradient loss: it
never looks at the private image. ``device`` picks where it runs (``auto``:
CUDA when present).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import torch

from hebench.inversion.attacks.imprint import ImprintSpec, read_out
from hebench.inversion.attacks.labels import infer_label, labels_from_last_bias
from hebench.inversion.attacks.matching import DISTANCES, total_variation
from hebench.inversion.views.local_update import LocalTraining, _loss, simulate_update
from hebench.inversion.views.observation import Observation


@dataclass(frozen=True)
class AttackConfig:
    """An attack recipe (``attacks/<name>.yaml``)."""

    name: str = "dlg"
    optimizer: str = "lbfgs"  # lbfgs (DLG, iDLG) or signed-adam (Inverting Gradients)
    steps: int = 300
    lr: float = 1.0
    distance: str = "l2"  # l2 (DLG) or cosine (Inverting Gradients; the masked-cosine variant under selective)
    tv: float = 0.2  # total-variation weight (inverting-gradients; breaching's 0.2)
    init: str = "randn"  # the dummy's start: randn (breaching, DLG) or rand (U(0, 1), hebench's IG before issue #29)
    keep: str = "objective"  # IG keeps its best iterate by: objective (match + TV, breaching) or match
    known_label: bool = False  # infer the label (idlg / inverting-gradients)
    patience: int = 40  # stop a restart whose best loss has not improved for this many steps
    tolerance: float = 1e-10  # stop once the gradient loss is this small
    imprint: ImprintSpec | None = None  # a malicious server's trap weights, planted before the victim trains


@dataclass
class Reconstruction:
    images: torch.Tensor  # (B, C, H, W) in [0, 1]
    labels: torch.Tensor  # (B,)
    grad_loss: float  # the attacker's own objective at the kept iterate
    finite: bool = True
    trace: list[float] = field(default_factory=list)
    prior_only: bool = False
    label_source: str = "optimised"  # inferred (iDLG) | given | optimised (soft label) | none
    wall_s: float = 0.0  # time this restart took
    cpu_s: float = 0.0  # CPU time of this process during the restart (all its threads)


def resolve_device(device: str) -> str:
    """``auto`` → ``cuda`` when a GPU is usable, else ``cpu``; other names pass through."""
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return device


def prior(obs: Observation) -> Reconstruction:
    """What an attacker outputs with nothing to match: the middle of the box, class 0 (the floor)."""
    shape = (obs.images, *obs.input_shape)
    return Reconstruction(
        torch.full(shape, 0.5), torch.zeros(obs.images, dtype=torch.long), math.nan, True, [], True, "none"
    )


def dummy_upload(obs: Observation, x: torch.Tensor, label: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """What the dummy data would upload under the observation's threat model (differentiable)."""
    params = list(obs.model.parameters())
    if obs.local is None and obs.clients == 1:
        loss = _loss(obs.model(x), label)
        return torch.autograd.grad(loss, params, create_graph=True)
    local = obs.local or LocalTraining(steps=1, lr=1.0)
    b = obs.batch_size
    per_client = [
        simulate_update(obs.model, x[k * b : (k + 1) * b], label[k * b : (k + 1) * b], local)
        for k in range(obs.clients)
    ]
    if obs.clients == 1:
        return per_client[0]
    return tuple(torch.stack(ts).mean(0) for ts in zip(*per_client, strict=True))


def _labels(obs: Observation, cfg: AttackConfig, gen: torch.Generator) -> tuple[torch.Tensor, str]:
    """The attacker's labels: inferred (iDLG) or given when the recipe knows them, else a soft dummy to optimise."""
    if cfg.known_label:
        if obs.images == 1:
            label = infer_label(obs)
            if label is not None:
                return torch.tensor([label]), "inferred"
        elif obs.labels is not None:
            return obs.labels.clone(), "given"
    return torch.randn((obs.images, obs.num_classes), generator=gen).requires_grad_(True), "optimised"


def lbfgs_attack(obs: Observation, cfg: AttackConfig, seed: int) -> Reconstruction:
    """DLG, and iDLG when the label is inferred."""
    if obs.gradients is None:
        return prior(obs)
    dev = obs.gradients[0].device
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn((obs.images, *obs.input_shape), generator=gen)
    y, source = _labels(obs, cfg, gen)
    x, y = (
        x.to(dev).requires_grad_(True),
        (y.detach().to(dev).requires_grad_(True) if y.is_floating_point() else y.to(dev)),
    )
    variables = [x, y] if y.is_floating_point() else [x]
    opt = torch.optim.LBFGS(variables, lr=cfg.lr)
    distance = DISTANCES[cfg.distance]
    best = (math.inf, x.detach().clone(), y.detach().clone())
    trace: list[float] = []
    finite = True

    def closure() -> torch.Tensor:
        opt.zero_grad()
        loss = distance(dummy_upload(obs, x, y), obs.gradients, obs.masks)
        loss.backward()
        return loss

    since_best = 0
    for _ in range(cfg.steps):
        before = (x.detach().clone(), y.detach().clone())
        loss = float(opt.step(closure).detach())  # the objective at ``before``
        if not math.isfinite(loss) or not torch.isfinite(x).all():
            finite = False
            break
        trace.append(loss)
        if loss < best[0] * (1 - 1e-4):
            best, since_best = (loss, *before), 0
        else:
            since_best += 1
        if best[0] < cfg.tolerance or since_best >= cfg.patience:
            break
    images = best[1].clamp(0, 1).cpu()
    labels = (best[2] if best[2].dtype == torch.long else best[2].argmax(dim=-1)).cpu()
    return Reconstruction(images, labels, best[0], finite, trace, label_source=source)


def step_decay(steps: int) -> list[int]:
    """breaching's ``step-lr`` schedule: the step size drops x0.1 at about 3/8, 5/8 and 7/8 of the steps."""
    return [int(steps // 2.667), int(steps // 1.6), int(steps // 1.142)]


def inverting_gradients(obs: Observation, cfg: AttackConfig, seed: int) -> Reconstruction:
    """Cosine match + TV, Adam on the gradient's sign, clamped to [0, 1]; keeps the best iterate by ``cfg.keep``."""
    if obs.gradients is None:
        return prior(obs)
    dev = obs.gradients[0].device
    gen = torch.Generator().manual_seed(seed)
    shape = (obs.images, *obs.input_shape)
    start = torch.randn(shape, generator=gen) if cfg.init == "randn" else torch.rand(shape, generator=gen)
    x = start.to(dev).requires_grad_(True)
    y, source = _labels(obs, cfg if cfg.known_label else _with_known(cfg), gen)
    y = y.detach().to(dev).requires_grad_(True) if y.is_floating_point() else y.to(dev)
    params = [x, y] if y.is_floating_point() else [x]
    opt = torch.optim.Adam(params, lr=cfg.lr)
    sched = torch.optim.lr_scheduler.MultiStepLR(opt, milestones=step_decay(cfg.steps), gamma=0.1)
    best = (math.inf, x.detach().clone(), y.detach().clone())
    best_kept = math.inf
    trace: list[float] = []
    finite = True
    for _ in range(cfg.steps):
        opt.zero_grad()
        match = DISTANCES[cfg.distance](dummy_upload(obs, x, y), obs.gradients, obs.masks)
        loss = match + cfg.tv * total_variation(x)
        loss.backward()
        value = float(match.detach())
        kept = value if cfg.keep == "match" else float(loss.detach())
        if not math.isfinite(kept):
            finite = False
            break
        trace.append(value)
        if kept < best_kept:
            best, best_kept = (value, x.detach().clone(), y.detach().clone()), kept
        x.grad.sign_()  # signed gradients, as in the paper
        opt.step()
        sched.step()
        with torch.no_grad():
            x.clamp_(0, 1)
    labels = (best[2] if best[2].dtype == torch.long else best[2].argmax(dim=-1)).cpu()
    return Reconstruction(best[1].clamp(0, 1).cpu(), labels, best[0], finite, trace, label_source=source)


def _with_known(cfg: AttackConfig) -> AttackConfig:
    from dataclasses import replace

    return replace(cfg, known_label=True)  # Inverting Gradients always takes the label it can get


def imprint_readout(obs: Observation, cfg: AttackConfig, seed: int) -> Reconstruction:
    """Robbing the Fed: the images read from the imprint block's rows (analytic; ``seed`` unused)."""
    if obs.gradients is None:
        return prior(obs)
    images, hits = read_out(obs.model, obs.gradients, obs.images)
    labels = labels_from_last_bias(obs).to(images.device)
    with torch.enable_grad():  # how well the read-out explains the upload (its own check, as the other attacks')
        x = images.clone().to(obs.gradients[0].device).requires_grad_(True)
        upload = dummy_upload(obs, x, labels.to(x.device))
        fit = float(DISTANCES["cosine"](upload, obs.gradients, obs.masks).detach())
    return Reconstruction(images, labels.cpu(), fit, True, [float(hits)], label_source="inferred")


OPTIMIZERS = {"lbfgs": lbfgs_attack, "signed-adam": inverting_gradients, "imprint-readout": imprint_readout}


def reconstruct(obs: Observation, cfg: AttackConfig, seed: int) -> Reconstruction:
    start, cpu = time.perf_counter(), time.process_time()
    rec = OPTIMIZERS[cfg.optimizer](obs, cfg, seed)
    rec.wall_s, rec.cpu_s = time.perf_counter() - start, time.process_time() - cpu
    return rec
