"""Run an attack over several victim batches, model seeds and restarts; score each reconstruction.

The victim is a client of the suite's dataset: its batches are attacked, and
its own local samples give the sensitivity map (FedML-HE's setting: the mask
is known to the attacker). Scores use the private images only after the
attack has chosen its output.
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

from hebench.data.registry import load_federated
from hebench.inversion.attacks import Reconstruction, reconstruct
from hebench.inversion.metrics import score, ssim
from hebench.inversion.observation import observe, victim_gradients
from hebench.inversion.recipes import load_recipe
from hebench.models import build_model
from hebench.selective.masks import layer_mask, local_map, top_fraction
from hebench.suite import DataSpec, SelectiveSpec

METRICS = ("mse", "psnr", "ssim", "uqi", "vifp", "msssim_upscaled")


@dataclass(frozen=True)
class AttackPlan:
    attack: str = "dlg"
    view: str = "raw"  # raw | he | selective
    selective: SelectiveSpec | None = None
    model: str = "lenet"
    data: DataSpec = field(default_factory=lambda: DataSpec(clients=1))
    batch_size: int = 1
    images: int = 4
    seeds: int = 2
    restarts: int = 4
    steps: int | None = None
    seed: int = 0
    dry_run: bool = False
    label: str = ""

    @property
    def name(self) -> str:
        if self.label:
            return self.label
        if self.view == "selective" and self.selective is not None:
            return f"selective/{self.selective.mask}-{self.selective.ratio:g}"
        return self.view


def init_model(name: str, shape: tuple[int, int, int], classes: int, seed: int) -> torch.nn.Module:
    torch.manual_seed(seed)
    model = build_model(name, shape, classes)
    if name == "lenet":  # DLG's initialisation (mit-han-lab/dlg): weights and biases U(-0.5, 0.5)
        for p in model.parameters():
            torch.nn.init.uniform_(p, -0.5, 0.5)
    return model.eval()


def selective_mask(
    spec: SelectiveSpec, model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor, seed: int
) -> np.ndarray:
    if spec.mask == "layers":
        return layer_mask(model, spec.layers)
    return top_fraction(local_map(spec.mask, model, x[: spec.samples], y[: spec.samples], seed), spec.ratio)


def _match(originals: np.ndarray, images: np.ndarray) -> list[int]:
    """Pair reconstructions with originals (batch > 1 comes back unordered); scoring only."""
    if len(originals) == 1:
        return [0]
    cost = np.array([[-ssim(o, r) for r in images] for o in originals])
    _, cols = linear_sum_assignment(cost)
    return list(cols)


def run_plan(plan: AttackPlan, on_result: Callable[[dict[str, Any]], None] | None = None) -> list[dict[str, Any]]:
    data = load_federated(plan.data, plan.seed)
    victim = data.clients[0]
    cfg = load_recipe(plan.attack)
    if plan.steps:
        cfg = replace(cfg, steps=plan.steps)
    out = []
    for image in range(plan.images):
        xb = victim.x[image * plan.batch_size : (image + 1) * plan.batch_size]
        yb = victim.y[image * plan.batch_size : (image + 1) * plan.batch_size]
        for s in range(plan.seeds):
            model_seed = plan.seed * 7919 + s
            model = init_model(plan.model, data.input_shape, data.num_classes, model_seed)
            grads = victim_gradients(model, xb, yb)
            mask = None
            if plan.view == "selective":
                assert plan.selective is not None
                mask = selective_mask(plan.selective, model, victim.x, victim.y, model_seed)
            obs = observe(model, grads, plan.view, mask, data.input_shape, data.num_classes, len(yb))
            record: dict[str, Any] = {
                "plan": plan.name,
                "attack": plan.attack,
                "view": plan.view,
                "image": image,
                "seed": s,
                "visible_fraction": obs.visible_fraction,
                "encrypted_fraction": None if mask is None else float(mask.mean()),
            }
            if plan.dry_run:
                out.append(record)
                if on_result:
                    on_result(record)
                continue
            tries: list[Reconstruction] = [reconstruct(obs, cfg, model_seed * 101 + r) for r in range(plan.restarts)]
            finite = [t for t in tries if t.finite and math.isfinite(t.grad_loss)] or tries
            best = min(finite, key=lambda t: t.grad_loss if math.isfinite(t.grad_loss) else math.inf)
            originals, images = xb.numpy(), best.images.numpy()
            order = _match(originals, images)
            scores = [score(originals[i], images[j]) for i, j in enumerate(order)]
            record.update(
                {
                    "prior_only": best.prior_only,
                    "grad_loss": best.grad_loss,
                    "restart_losses": [t.grad_loss for t in tries],
                    "diverged_restarts": sum(not t.finite for t in tries),
                    "label_accuracy": float(np.mean([int(best.labels[j]) == int(yb[i]) for i, j in enumerate(order)])),
                    **{m: float(np.mean([sc[m] for sc in scores])) for m in METRICS},
                    "msssim": None,
                    "_original": originals,
                    "_reconstruction": images[order],
                }
            )
            out.append(record)
            if on_result:
                on_result(record)
    return out


def summarize(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean and spread per metric over images and seeds (not one lucky image)."""
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
