"""What a configuration adds to its mode: ``selective:`` encryption, ``dp:`` noise on its updates, and a
modelled ``tee:`` cost row."""

from __future__ import annotations

import importlib.util
from typing import Literal

from pydantic import Field, model_validator

from hebench.config.base import Frozen


class SelectiveSpec(Frozen):
    """Encrypt only the parameters a mask selects (FedML-HE); the rest travels in plaintext."""

    mask: Literal["sensitivity", "magnitude", "random", "layers"] = "sensitivity"
    ratio: float = Field(0.1, ge=0, le=1)  # fraction encrypted (ignored by layers)
    layers: tuple[str, ...] = ("first", "last")  # names or patterns, for mask: layers
    samples: int = Field(16, ge=1)  # K local samples the sensitivity map averages over

    @property
    def needs_agreement(self) -> bool:
        """Masks from score maps are agreed under encryption first (FedML-HE); layer masks are known up front."""
        return self.mask != "layers"


class DPSpec(Frozen):
    """Differential privacy on a configuration's client updates (see docs/dp-tls-tee.md).

    ``client``: the update (trained model minus the round's global model) is clipped to L2 norm ``clip`` and
    Gaussian noise N(0, (noise_multiplier·clip)²) is added per coordinate, as Flower's client-side fixed
    clipping. ``sample``: DP-SGD with Opacus (per-sample clipping to ``clip``, noise ``noise_multiplier·clip``
    per step), with ε at ``delta`` accounted over the run's rounds. The noise is secret to each client (the OS
    CSPRNG); ``reproducible_noise`` derives it from the suite's seed instead, so the aggregator can remove it:
    for debugging only, labelled in the configuration's label and a ``security_note`` record.
    """

    level: Literal["client", "sample"]
    clip: float = Field(1.0, gt=0)
    noise_multiplier: float = Field(ge=0)
    delta: float = Field(1e-5, gt=0, lt=1)  # sample level: ε is reported at this δ
    accountant: Literal["rdp", "prv"] = "rdp"  # sample level: Opacus' accountant
    reproducible_noise: bool = False  # DEBUGGING ONLY: noise from the suite seed, which the aggregator can remove

    @model_validator(mode="after")
    def _opacus_installed(self) -> DPSpec:
        if self.level == "sample":
            if importlib.util.find_spec("opacus") is None:
                raise ValueError("level: sample needs Opacus, which is not installed: pip install 'hebench[dp]'")
        return self

    @property
    def tag(self) -> str:
        """The configuration label's part for this DP setting."""
        tag = f"dp-{self.level}-z{self.noise_multiplier:g}-c{self.clip:g}"
        return tag + ("-REPRODUCIBLE-NOISE" if self.reproducible_noise else "")


class TEESpec(Frozen):
    """A *modelled* TEE row: costs of this configuration's measured run scaled by a published linear model.

    ``coefficients`` is a YAML file of overhead coefficients per mechanism (none is shipped: see
    docs/dp-tls-tee.md); ``mechanisms`` picks which of them are applied.
    """

    coefficients: str
    mechanisms: tuple[str, ...] = Field(min_length=1)
