"""The ``model:`` block: which network the clients train."""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import Field

from hebench.config.base import Frozen

ModelName = Literal["cnn_dropout", "lenet", "mlp", "resnet18", "resnet50", "vit_small", "bert_base"]
MODELS: tuple[str, ...] = get_args(ModelName)


class ModelSpec(Frozen):
    # resnet50, vit_small, bert_base: randomly initialised (no weights can be downloaded): cost, not accuracy
    name: ModelName = "mlp"
    hidden: int = Field(16, ge=1)  # mlp only
