"""What a model is trained for, as one interface the FedAvg client calls: build, loss, evaluation, sensitivity.

Two tasks: ``classification`` (images, or generated token sequences: cross-entropy against labels, accuracy) and
``next-token`` (the GPT-2 decoders on text: next-token cross-entropy, perplexity; :mod:`.language.task`). The
suite's model names its task (``ModelSpec.task``); :func:`hebench.models.tasks.task_for` looks it up. Everything
the client does with a model goes through here, so a new task is one class, not a branch in the client.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import torch
from torch import nn

from hebench.config import ModelSpec


@dataclass(frozen=True)
class ModelInputs:
    """What the data tells a model's builder: the shape of one sample, the classes (text: the vocabulary's size)
    and, for text, the vocabulary's ``<|endoftext|>`` id."""

    input_shape: tuple[int, ...]
    num_classes: int
    end_of_text: int | None = None


class DescribesInputs(Protocol):
    """What :func:`model_inputs` reads (a :class:`~hebench.data.federated.FederatedData`)."""

    @property
    def input_shape(self) -> tuple[int, ...]: ...
    @property
    def num_classes(self) -> int: ...
    @property
    def end_of_text(self) -> int | None: ...


def model_inputs(data: DescribesInputs) -> ModelInputs:
    """What federated ``data`` tells its model's builder."""
    return ModelInputs(data.input_shape, data.num_classes, data.end_of_text)


@dataclass(frozen=True)
class ParameterCounts:
    total: int  # every parameter of the model (tied ones once)
    shared: int  # the trainable ones: what a client's update carries


class Task(Protocol):
    name: str
    metrics: tuple[str, ...]  # what :meth:`evaluate` reports, headline first

    def build(self, spec: ModelSpec, inputs: ModelInputs, seed: int) -> nn.Module:
        """The initial model, the same on every party for the same ``seed`` (torch's global generator is used)."""
        ...

    def counts(self, spec: ModelSpec, inputs: ModelInputs) -> ParameterCounts:
        """Its parameters, counted without building it in memory."""
        ...

    def loss(self, model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """The mean training loss of one batch (differentiable)."""
        ...

    def evaluate(self, model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> dict[str, float]:
        """The model's quality on held-out data, by :attr:`metrics` name."""
        ...

    def sensitivity(self, model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> dict[str, torch.Tensor]:
        """Per trainable parameter, the mean over samples of |d loss / d w| of each sample (FedML-HE's map)."""
        ...
