"""A client's model-side work, shared by host-he clients and offload hosts.

Training, applying a decrypted aggregate, evaluation, checkpoints, and the
out-of-band oracle records the runner uses to check decryption error.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from hebench.fl.party import PartyContext, safe_label
from hebench.fl.training import evaluate, train_locally
from hebench.fl.update import load_vector, model_vector
from hebench.models import build_model


class LocalModel:
    def __init__(self, ctx: PartyContext, records: Any) -> None:
        assert ctx.data is not None
        self.ctx, self.records, self.data = ctx, records, ctx.data
        torch.manual_seed(ctx.suite.seed)  # same initial model everywhere
        self.model = build_model(ctx.suite.model.name, ctx.input_shape, ctx.num_classes, ctx.suite.model.hidden)
        if ctx.initial is not None:
            load_vector(self.model, ctx.initial)
        self.checkpoints = ctx.run_dir / "checkpoints" / safe_label(ctx.config.label)

    @property
    def samples(self) -> int:
        return len(self.data)

    def train(self, round_index: int) -> tuple[np.ndarray, float]:
        """Local training for one round; returns the update vector and the mean loss."""
        seed = self.ctx.suite.seed * 1_000_003 + round_index * 1009 + self.ctx.client_index
        loss = train_locally(self.model, self.data.x, self.data.y, self.ctx.suite.training, seed)
        vector = model_vector(self.model)
        if self.ctx.suite.measure.decryption_error:
            self.records.put(
                {"kind": "oracle_update", "client": self.ctx.client_index, "round": round_index, "vector": vector}
            )
        return vector, loss

    def apply(self, round_index: int, vector: np.ndarray, weights: dict[str, float]) -> dict[str, float]:
        """Load the decrypted global model; the evaluating client also checkpoints and reports."""
        vector = np.asarray(vector, dtype=np.float32)
        load_vector(self.model, vector)
        if self.ctx.client_index != 0:
            return {}
        assert self.ctx.test is not None
        ev = evaluate(self.model, *self.ctx.test)
        self.checkpoints.mkdir(parents=True, exist_ok=True)
        np.save(self.checkpoints / f"round-{round_index}.npy", vector)
        if self.ctx.suite.measure.decryption_error:
            self.records.put({"kind": "oracle_aggregate", "round": round_index, "vector": vector, "weights": weights})
        return {"accuracy": ev.accuracy, "loss": ev.loss}
