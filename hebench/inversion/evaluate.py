"""Run an attack over several victim batches, model seeds and restarts; score each reconstruction.

The victim is client 0 of the suite's dataset (clients 0..N-1 when the
attacker sees the aggregate of N). What it uploads is one gradient of its
batch, or its update after E local SGD steps; what the attacker sees of that
is the plan's view, and under selective encryption the plan's attacker and
mask source decide the loss and the mask. Scores use the private images only
after the attack has chosen its output (best restart by its own gradient loss).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from scipy.optimize import linear_sum_assignment

from hebench.analysis.success import SUCCESS_SSIM, success_rate
from hebench.config import DataSpec, DPSpec, SelectiveSpec
from hebench.data.registry import load_federated
from hebench.errors import DatasetError, ParameterError
from hebench.inversion.attacks import Reconstruction
from hebench.inversion.attacks.config import ENGINES
from hebench.inversion.attacks.trap_weights import plant_imprint
from hebench.inversion.devices import resolve_device
from hebench.inversion.memo import Memo, digest
from hebench.inversion.parallel import Pending, RestartPool, shared_pool
from hebench.inversion.recipes import load_recipe
from hebench.inversion.scoring.metrics import score, ssim
from hebench.inversion.views.local_update import LocalTraining
from hebench.inversion.views.observation import ATTACKERS, Observation, observe, victim_update
from hebench.models import build_model
from hebench.models.lenet import dlg_init
from hebench.protections.selective.mask_source import MASK_SOURCES, selective_mask
from hebench.protections.selective.masks import local_map

METRICS = ("mse", "psnr", "ssim", "uqi", "vifp", "msssim_upscaled")


@dataclass(frozen=True)
class AttackPlan:
    attack: str = "dlg"
    view: str = "raw"  # raw | he | selective
    selective: SelectiveSpec | None = None
    model: str = "lenet"
    hidden: int = 16  # the mlp's hidden width (the run's, when the attack replays the run's model)
    data: DataSpec = field(default_factory=lambda: DataSpec(clients=1))
    batch_size: int = 1  # images per client
    images: int = 4  # victim batches
    seeds: int = 2  # model initialisations per batch
    restarts: int = 4
    steps: int | None = None
    seed: int = 0
    dry_run: bool = False
    label: str = ""
    attacker: str = "mask-aware"  # mask-aware | fedml-he-zeros | fedml-he-noise (selective only)
    mask_source: str = "local"  # sample | local | global (data-dependent masks only)
    local_steps: int | None = None  # None: one gradient (DLG); E: the upload after E local SGD steps
    local_lr: float = 0.1  # known to the attacker
    local_batch: int | None = None  # local mini-batch (None: the client's whole batch)
    clients: int = 1  # the attacker sees the FedAvg mean of this many clients' uploads
    success_ssim: float = SUCCESS_SSIM
    workers: int | None = None  # restart worker processes (None: one per available core)
    device: str = "auto"  # auto | cpu | cuda
    engine: str | None = None  # batched | serial (None: the recipe's, batched)
    dp: DPSpec | None = None  # the configuration's DP: the attacker sees each client's noisy upload
    # the threat model (hebench.protections.threats): who attacks, what it obtains, the evidence, how it is obtained
    adversary: str = "aggregator"
    k: int = 0  # colluding clients or share holders
    strategy: str | None = None  # a malicious aggregator's
    obtains: str | None = None  # every-update, victim-update, sum, visible-coordinates or nothing
    evidence: str | None = None  # the test that shows what this adversary obtains in this mode
    config: str | None = None  # the configuration attacked (its label)
    conduit: str | None = None  # the real protocol path of hebench.inversion.views.conduits (None: a simulated view)
    protocol: str | None = None  # the conduit's configuration: JSON {mode, adapter, params}
    round_clients: int = 0  # clients in the round the conduit runs, the victim first (0: ``clients``)

    @property
    def name(self) -> str:
        if self.label:
            return self.label
        if self.view == "selective" and self.selective is not None:
            return f"selective/{self.selective.mask}-{self.selective.ratio:g}"
        return self.view

    @property
    def local(self) -> LocalTraining | None:
        return None if self.local_steps is None else LocalTraining(self.local_steps, self.local_lr, self.local_batch)

    @property
    def threat(self) -> str:
        """One line naming what was observed."""
        what = "gradient" if self.local_steps is None else f"update after {self.local_steps} local steps"
        return what + (f", FedAvg mean of {self.clients} clients" if self.clients > 1 else "")

    def check(self) -> None:
        if self.engine not in (None, *ENGINES):
            raise ParameterError(f"engine '{self.engine}' is unknown", f"use one of {', '.join(ENGINES)}")
        if self.attacker not in ATTACKERS:
            raise ParameterError(f"attacker '{self.attacker}' is unknown", f"use one of {', '.join(ATTACKERS)}")
        if self.mask_source not in MASK_SOURCES:
            raise ParameterError(
                f"mask source '{self.mask_source}' is unknown", f"use one of {', '.join(MASK_SOURCES)}"
            )
        if self.local_steps is not None and self.model in ("resnet18", "cnn_dropout"):
            raise ParameterError(
                f"the {self.local_steps}-step replay needs a model without batch norm or dropout, not {self.model}",
                "use lenet or mlp for local_steps, or attack one gradient",
            )
        if self.clients > self.data.clients:
            raise ParameterError(
                f"the attack averages {self.clients} clients but the data has {self.data.clients}",
                f"set data.clients to at least {self.clients}",
            )


def init_model(name: str, shape: tuple[int, int, int], classes: int, seed: int, hidden: int = 16) -> torch.nn.Module:
    torch.manual_seed(seed)
    model = build_model(name, shape, classes, hidden)
    if name == "lenet":
        dlg_init(model)
    return model.eval()


def _match(originals: np.ndarray, images: np.ndarray) -> list[int]:
    """Pair reconstructions with originals (batch > 1 comes back unordered); scoring only."""
    if len(originals) == 1:
        return [0]
    cost = np.array([[-ssim(o, r) for r in images] for o in originals])
    _, cols = linear_sum_assignment(cost)
    return list(cols)


def _batches(
    plan: AttackPlan, clients: tuple, image: int, count: int = 0
) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    b, count = plan.batch_size, count or plan.clients
    xs = [c.x[image * b : (image + 1) * b] for c in clients[:count]]
    ys = [c.y[image * b : (image + 1) * b] for c in clients[:count]]
    short = min(len(y) for y in ys)
    if short < b:
        have = min(len(c) for c in clients[:count])
        raise DatasetError(
            f"a victim client holds {have} images; {plan.images} batches of {b} need {plan.images * b}",
            "lower privacy.images or batch_size, or data.clients (more images per client)",
        )
    return xs, ys


def _selective_mask(
    plan: AttackPlan,
    data,
    model,
    batch: tuple[torch.Tensor, torch.Tensor],
    image: int,
    model_seed: int,
    memo: Memo,
    model_key: tuple,
) -> np.ndarray:
    """The plan's mask over the victim's update, made once per campaign (plans differ by attacker far more often
    than by mask), from score maps made once per model and data (one map serves every ratio)."""
    assert plan.selective is not None

    def score(kind: str, model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor, seed: int) -> np.ndarray:
        key = ("map", model_key, kind, seed, digest(x), digest(y))
        return memo.get(key, lambda: local_map(kind, model, x, y, seed))

    spec, source = plan.selective, plan.mask_source
    key = ("mask", model_key, repr(spec), source, image, plan.batch_size, plan.round_clients, plan.clients)
    return memo.get(key, lambda: selective_mask(spec, model, source, batch, data.clients, model_seed, score))


def _observation(
    plan: AttackPlan, data, model, image: int, model_seed: int, memo: Memo | None = None, model_key: tuple = ()
) -> tuple[Observation, dict, torch.Tensor]:
    """What the plan's adversary observes of victim batch ``image``; ``memo`` (with the key of ``model``'s weights)
    shares the victim's upload, score maps and masks with the other plans of a campaign."""
    if memo is None:
        memo, model_key = Memo(), ("this plan",)
    local = plan.local
    if local is not None:
        local = replace(local, seed=model_seed)
    if plan.conduit is not None:
        return _conveyed(plan, data, model, image, model_seed, local, memo, model_key)
    xs, ys = _batches(plan, data.clients, image)
    # the victim's upload depends on its batch, model and training, not on what the aggregator sees of it
    made = (model_key, image, plan.batch_size, plan.clients, repr(local), repr(plan.dp), plan.local_lr)
    upload = memo.get(("upload", made), lambda: victim_update(model, xs, ys, local, plan.dp, plan.local_lr, model_seed))
    mask = None
    if plan.view == "selective":
        mask = _selective_mask(plan, data, model, (xs[0], ys[0]), image, model_seed, memo, model_key)
    y_all = torch.cat(ys)
    obs = observe(
        model,
        upload,
        plan.view,
        mask,
        data.input_shape,
        data.num_classes,
        plan.batch_size,
        attacker=plan.attacker,
        clients=plan.clients,
        local=local,
        labels=y_all,
        seed=model_seed,
    )
    info = {
        "visible_fraction": obs.visible_fraction,
        "encrypted_fraction": None if mask is None else float(mask.mean()),
    }
    return obs, info, torch.cat(xs)


def _conveyed(
    plan: AttackPlan,
    data,
    model,
    image: int,
    model_seed: int,
    local: LocalTraining | None,
    memo: Memo,
    model_key: tuple,
) -> tuple[Observation, dict, torch.Tensor]:
    """The observation an adversary obtains through the mode's real protocol code (:mod:`~.conduits`)."""
    from hebench.inversion.views.conduits import convey

    xs, ys = _batches(plan, data.clients, image, max(plan.round_clients, plan.clients))
    mask = None  # a selective configuration's: its clients encrypt those coordinates in the live round
    if plan.view == "selective" and plan.selective is not None:
        mask = _selective_mask(plan, data, model, (xs[0], ys[0]), image, model_seed, memo, model_key)
    got = convey(plan, model, xs, ys, local, model_seed, mask)
    seen = got.clients or plan.clients  # a red-team view may hold fewer clients' updates than the plan's
    if got.encrypted is not None and got.gradients is not None:  # the adversary read the plaintext part only
        shape, classes, labels = data.input_shape, data.num_classes, torch.cat(ys[:seen])
        obs = observe(
            model,
            got.gradients,
            "selective",
            got.encrypted,
            shape,
            classes,
            plan.batch_size,
            attacker=plan.attacker,
            clients=seen,
            local=local,
            labels=labels,
            seed=model_seed,
        )
        info = {"visible_fraction": obs.visible_fraction, "encrypted_fraction": float(got.encrypted.mean())}
        return obs, {**info, "detected": got.detected}, torch.cat(xs[:seen])
    obs = Observation(
        model,
        got.gradients,
        got.masks,
        data.input_shape,
        data.num_classes,
        plan.batch_size,
        seen,
        local,
        labels=torch.cat(ys[:seen]),
        visible=got.masks,
    )
    info = {"visible_fraction": obs.visible_fraction, "encrypted_fraction": None, "detected": got.detected}
    return obs, info, torch.cat(xs[:seen])


@dataclass
class SubmittedPlan:
    """A plan whose restarts are queued in a pool (:func:`submit_plan`); :meth:`finish` scores them."""

    plan: AttackPlan
    jobs: list[tuple[dict[str, Any], Observation, torch.Tensor, list[Pending]]]
    device: str
    engine: str

    def finish(self, on_result: Callable[[dict[str, Any]], None] | None = None) -> list[dict[str, Any]]:
        """Wait for each victim's restarts in order, keep the best by the attacker's own loss, score it."""
        out = []
        for record, obs, x_all, handles in self.jobs:
            if not self.plan.dry_run:
                _score(record, obs, x_all, [h.result() for h in handles], self.device, self.engine)
            out.append(record)
            if on_result:
                on_result(record)
        return out


def submit_plan(plan: AttackPlan, pool: RestartPool | None = None, memo: Memo | None = None) -> SubmittedPlan:
    """Build the plan's observations and queue its restarts in ``pool`` (sent when a result is first asked for,
    so that the restarts of several plans submitted in turn share batches); ``memo`` keeps the dataset, the
    victims' uploads, score maps and masks for the next plans of a campaign."""
    plan.check()
    memo = memo or Memo()
    data_key = (plan.data.model_dump_json(), plan.seed)
    data = memo.get(("data", data_key), lambda: load_federated(plan.data, plan.seed))
    cfg = load_recipe(plan.attack)
    if plan.steps:
        cfg = replace(cfg, steps=plan.steps)
    if plan.engine:
        cfg = replace(cfg, engine=plan.engine)
    pool = pool or shared_pool(plan.workers, plan.device)
    jobs = []
    for image in range(plan.images):
        for s in range(plan.seeds):
            model_seed = plan.seed * 7919 + s
            model = init_model(plan.model, data.input_shape, data.num_classes, model_seed, plan.hidden)
            if cfg.imprint is not None:  # a malicious server: its trap weights, bins from its public (test) data
                model = plant_imprint(model, data.input_shape, data.test_x, cfg.imprint)
            model_key = (plan.model, plan.hidden, data_key, model_seed, repr(cfg.imprint))
            obs, info, x_all = _observation(plan, data, model, image, model_seed, memo, model_key)
            record: dict[str, Any] = {
                "plan": plan.name,
                "attack": plan.attack,
                "view": plan.view,
                "attacker": plan.attacker if plan.view == "selective" else None,
                "mask_source": plan.mask_source if plan.view == "selective" else None,
                "threat": plan.threat,
                "batch_size": plan.batch_size,
                "clients": plan.clients,
                "local_steps": plan.local_steps,
                **threat_fields(plan),
                "image": image,
                "seed": s,
                **info,
            }
            tries = [] if plan.dry_run else [pool.submit(obs, cfg, model_seed * 101 + r) for r in range(plan.restarts)]
            jobs.append((record, obs, x_all, tries))
    return SubmittedPlan(plan, jobs, pool.device, cfg.engine)


def run_plan(
    plan: AttackPlan, on_result: Callable[[dict[str, Any]], None] | None = None, pool: RestartPool | None = None
) -> list[dict[str, Any]]:
    """Attack every victim of the plan and score the best restart of each."""
    return submit_plan(plan, pool).finish(on_result)


def threat_fields(plan: AttackPlan) -> dict[str, Any]:
    """The threat model's fields of a record (left out for today's default, so older readers see no change)."""
    return {
        "adversary": plan.adversary,
        "k": plan.k or None,
        "strategy": plan.strategy,
        "obtains": plan.obtains,
        "evidence": plan.evidence,
        "config": plan.config,
        "conduit": plan.conduit,
    }


def _label_accuracy(found: torch.Tensor, true: torch.Tensor) -> float:
    """Labels recovered, as multisets (a batch comes back unordered): |found ∩ true| / batch."""
    from collections import Counter

    common = Counter(int(v) for v in found) & Counter(int(v) for v in true)
    return sum(common.values()) / max(len(true), 1)


def _score(
    record: dict[str, Any],
    obs: Observation,
    x_all: torch.Tensor,
    tries: list[Reconstruction],
    device: str,
    engine: str,
) -> None:
    finite = [t for t in tries if t.finite and math.isfinite(t.grad_loss)] or tries
    best = min(finite, key=lambda t: t.grad_loss if math.isfinite(t.grad_loss) else math.inf)
    originals, images = x_all.numpy(), best.images.numpy()
    order = _match(originals, images)
    scores = [score(originals[i], images[j]) for i, j in enumerate(order)]
    labels = obs.labels if obs.labels is not None else torch.zeros(len(originals), dtype=torch.long)
    record.update(
        {
            "prior_only": best.prior_only,
            "label_source": best.label_source,
            "grad_loss": best.grad_loss,
            "restart_losses": [t.grad_loss for t in tries],
            "restart_wall_s": [t.wall_s for t in tries],
            "restart_cpu_s": [t.cpu_s for t in tries],
            "restart_steps": [len(t.trace) for t in tries],
            "diverged_restarts": sum(not t.finite for t in tries),
            "restart_batch": [t.batch for t in tries],
            "engine": engine,
            "device": device,
            "label_accuracy": _label_accuracy(best.labels, labels),
            **{m: float(np.mean([sc[m] for sc in scores])) for m in METRICS},
            "ssim_per_image": [sc["ssim"] for sc in scores],
            "msssim": None,
            "_original": originals,
            "_reconstruction": images[order],
        }
    )


def summarize(records: list[dict[str, Any]], success_ssim: float = SUCCESS_SSIM) -> dict[str, Any]:
    """Mean and spread per metric over images and seeds (not one lucky image), and the success rate."""
    out: dict[str, Any] = {"n": len(records)}
    for metric in (*METRICS, "label_accuracy", "grad_loss"):
        values = [r[metric] for r in records if r.get(metric) is not None and math.isfinite(r[metric])]
        if values:
            out[metric] = {
                "mean": statistics.fmean(values),
                "std": statistics.stdev(values) if len(values) > 1 else 0.0,
                "min": min(values),
                "max": max(values),
            }
    per_image = [s for r in records for s in r.get("ssim_per_image", [])]
    if per_image:
        out["success"] = success_rate(per_image, success_ssim)
    for key in ("restart_wall_s", "restart_cpu_s"):
        values = [w for r in records for w in r.get(key, [])]
        if values:
            out[key] = {"mean": statistics.fmean(values), "max": max(values), "n": len(values)}
    return out


def save_grid(records: list[dict[str, Any]], path: Path, scale: int = 3) -> Path | None:
    """Originals (top) above reconstructions (bottom), one column per image and seed."""
    from PIL import Image

    pairs = [(r["_original"], r["_reconstruction"]) for r in records if "_original" in r]
    if not pairs:
        return None
    tiles = []
    for originals, recons in pairs:
        for o, rec in zip(originals, recons, strict=True):
            tiles.append((o, rec))
    c, h, w = tiles[0][0].shape
    pad = 2
    canvas = np.ones((2 * (h + pad), len(tiles) * (w + pad), c), dtype=np.float64)
    for k, (o, rec) in enumerate(tiles):
        x0 = k * (w + pad)
        canvas[0:h, x0 : x0 + w] = np.transpose(o, (1, 2, 0))
        canvas[h + pad : 2 * h + pad, x0 : x0 + w] = np.transpose(np.clip(rec, 0, 1), (1, 2, 0))
    img = (canvas * 255).round().astype(np.uint8)
    pil = Image.fromarray(img[..., 0] if c == 1 else img)
    pil = pil.resize((pil.width * scale, pil.height * scale), Image.NEAREST)
    path.parent.mkdir(parents=True, exist_ok=True)
    pil.save(path)
    return path


def public(record: dict[str, Any]) -> dict[str, Any]:
    """The record without its image arrays (for JSON lines)."""
    return {k: v for k, v in record.items() if not k.startswith("_")}


__all__ = ["AttackPlan", "init_model", "public", "resolve_device", "run_plan", "save_grid", "submit_plan", "summarize"]
