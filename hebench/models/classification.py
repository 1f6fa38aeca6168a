"""Classification: cross-entropy against labels, accuracy on the held-out set (the image models, BERT on tokens)."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from hebench.config import ModelSpec
from hebench.models.registry import build_model, count_parameters
from hebench.models.task import ModelInputs, ParameterCounts


def _image_shape(inputs: ModelInputs) -> tuple[int, int, int]:
    return tuple(inputs.input_shape)  # type: ignore[return-value]


@dataclass(frozen=True)
class ClassificationTask:
    name: str = "classification"
    metrics: tuple[str, ...] = ("accuracy", "loss")

    def build(self, spec: ModelSpec, inputs: ModelInputs, seed: int) -> nn.Module:
        torch.manual_seed(seed)
        return build_model(spec.name, _image_shape(inputs), inputs.num_classes, spec.hidden)

    def counts(self, spec: ModelSpec, inputs: ModelInputs) -> ParameterCounts:
        total = count_parameters(spec.name, _image_shape(inputs), inputs.num_classes, spec.hidden)
        return ParameterCounts(total, total)

    def loss(self, model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(model(x), y)

    @torch.no_grad()
    def evaluate(self, model: nn.Module, x: torch.Tensor, y: torch.Tensor, batch: int = 512) -> dict[str, float]:
        model.eval()
        correct, loss = 0, 0.0
        for i in range(0, len(y), batch):
            out = model(x[i : i + batch])
            loss += float(F.cross_entropy(out, y[i : i + batch], reduction="sum"))
            correct += int((out.argmax(1) == y[i : i + batch]).sum())
        return {"accuracy": correct / max(len(y), 1), "loss": loss / max(len(y), 1)}

    def sensitivity(self, model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> dict[str, torch.Tensor]:
        """Per-sample gradients in one vectorised pass (``torch.func.vmap`` over ``grad``), never one autograd
        call per parameter; for one sample under one-hot cross-entropy the map equals |gradient|."""
        from torch.func import functional_call, grad, vmap

        params = {k: v.detach() for k, v in model.named_parameters()}
        buffers = {k: v.detach() for k, v in model.named_buffers()}
        was_training = model.training
        model.eval()

        def loss(p: dict[str, torch.Tensor], xi: torch.Tensor, yi: torch.Tensor) -> torch.Tensor:
            out = functional_call(model, (p, buffers), (xi.unsqueeze(0),))
            return F.cross_entropy(out, yi.unsqueeze(0))

        per_sample = vmap(grad(loss), in_dims=(None, 0, 0))(params, x, y)
        model.train(was_training)
        return {k: v.abs().mean(0) for k, v in per_sample.items()}


CLASSIFICATION = ClassificationTask()
