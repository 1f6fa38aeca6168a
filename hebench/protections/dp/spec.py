"""Differential privacy's spec: the ``dp:`` block of a configuration (level, clipping, noise, accounting).

It combines with every mode; the mechanism that applies it is :mod:`hebench.protections.dp.mechanism`. Spec
level: pure data, no protocol code.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class DPSpec(BaseModel):
    """Differential privacy on a configuration's client updates (see docs/dp-tls-tee.md).

    ``client``: the update (trained model minus the round's global model) is clipped to L2 norm ``clip`` and
    Gaussian noise N(0, (noise_multiplier·clip)²) is added per coordinate, as Flower's client-side fixed
    clipping. ``sample``: DP-SGD with Opacus (per-sample clipping to ``clip``, noise ``noise_multiplier·clip``
    per step), with ε at ``delta`` accounted over the run's rounds. The noise is secret to each client (the OS
    CSPRNG); ``reproducible_noise`` derives it from the suite's seed instead, so the aggregator can remove it:
    for debugging only, labelled in the configuration's label and a ``security_note`` record.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    level: Literal["client", "sample"]
    clip: float = Field(1.0, gt=0)
    noise_multiplier: float = Field(ge=0)
    delta: float = Field(1e-5, gt=0, lt=1)  # sample level: ε is reported at this δ
    accountant: Literal["rdp", "prv"] = "rdp"  # sample level: Opacus' accountant
    reproducible_noise: bool = False  # DEBUGGING ONLY: noise from the suite seed, which the aggregator can remove

    @model_validator(mode="after")
    def _opacus_installed(self) -> DPSpec:
        if self.level == "sample":
            import importlib.util

            if importlib.util.find_spec("opacus") is None:
                raise ValueError("level: sample needs Opacus, which is not installed: pip install 'hebench[dp]'")
        return self

    @property
    def tag(self) -> str:
        """The configuration label's part for this DP setting."""
        tag = f"dp-{self.level}-z{self.noise_multiplier:g}-c{self.clip:g}"
        return tag + ("-REPRODUCIBLE-NOISE" if self.reproducible_noise else "")
