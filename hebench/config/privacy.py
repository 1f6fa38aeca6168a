"""The ``privacy:`` block: the gradient-inversion attacks scored against each configuration, and who attacks
(the threats, resolved per configuration by its mode's threat rules)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from hebench.config.base import FieldProblem, Frozen
from hebench.config.configurations import Configuration
from hebench.protections.threats import Adversary, Outcome, Strategy


class ThreatSpec(Frozen):
    """Who attacks, and what a victim uploads: one gradient (DLG), or its update after E local SGD steps; alone
    or averaged. ``adversary`` (default: the honest-but-curious aggregator) and its ``k`` colluders or malicious
    ``strategy`` are resolved per configuration by its mode's threat rules (:mod:`hebench.protections.threats`)."""

    local_steps: int | None = Field(None, ge=1)  # None: one gradient; E: the update after E steps (lr known)
    local_lr: float = Field(0.1, gt=0)
    local_batch: int | None = Field(None, ge=1)  # local mini-batch (None: the whole batch each step)
    clients: int = Field(1, ge=1)  # the attacker sees the FedAvg mean of this many clients' uploads
    adversary: Literal[
        "aggregator", "colluding-clients", "key-holder", "share-holders", "malicious-aggregator", "observer"
    ] = "aggregator"
    k: int | None = Field(None, ge=1)  # colluding clients or share holders (colluding-clients: 1 when not given)
    strategy: (  # malicious-aggregator: how it deviates (hebench.protections.threats.Strategy)
        Literal[
            "model-inconsistency",
            "trap-weights",
            "dropout-lie",
            "withhold-neighbours",
            "forge-neighbours",
            "split-graph",
            "replay",
        ]
        | None
    ) = None

    @model_validator(mode="after")
    def _adversary_takes(self) -> ThreatSpec:
        takes_k = self.adversary in ("colluding-clients", "share-holders")
        if self.k is not None and not takes_k:
            raise FieldProblem(
                "k",
                f"k counts colluders of colluding-clients or share-holders, not of {self.adversary}: "
                "remove k, or set adversary: colluding-clients",
            )
        if self.adversary == "share-holders" and self.k is None:
            raise FieldProblem("k", "share-holders needs k, how many of the K share holders collude: set k")
        if (self.strategy is None) == (self.adversary == "malicious-aggregator"):
            raise FieldProblem(
                "strategy",
                "malicious-aggregator needs a strategy (" + ", ".join(s.value for s in Strategy) + ")"
                if self.strategy is None
                else f"strategy is how a malicious-aggregator deviates; adversary {self.adversary} has none",
            )
        return self

    def field_at_fault(self) -> str:
        """The key a mode's refusal of this threat is about (:meth:`outcome`'s ValueError): the colluders ``k``
        where the adversary takes them, else the malicious aggregator's ``strategy``, else ``adversary``."""
        if self.adversary in ("colluding-clients", "share-holders"):
            return "k"
        return "strategy" if self.adversary == "malicious-aggregator" else "adversary"

    @property
    def colluders(self) -> int:
        return self.k if self.k is not None else (1 if self.adversary == "colluding-clients" else 0)

    def outcome(self, config: Configuration, clients_per_round: int) -> Outcome:
        """What this adversary obtains from ``config`` (``ValueError`` with the fix where it does not apply)."""
        params = config.mode_params
        holders = 1 + params.extra_aggregators if params is not None else 0
        return config.spec.outcome(
            Adversary(self.adversary),
            k=self.colluders,
            strategy=Strategy(self.strategy) if self.strategy else None,
            tls=config.transport == "tls",
            selective=config.selective is not None,
            clients=clients_per_round,
            holders=holders,
            params=params,
        )


class PrivacySpec(Frozen):
    """Gradient-inversion attacks scored against each configuration, and a privacy–overhead frontier."""

    attack: str = "dlg"  # a recipe in attacks/ (dlg, idlg, inverting-gradients, imprint) or a YAML path
    model: Literal["cnn_dropout", "lenet", "mlp", "resnet18"] = "lenet"  # DLG's sigmoid LeNet
    batch_size: int = Field(1, ge=1)
    images: int = Field(4, ge=1)  # victim batches
    seeds: int = Field(2, ge=1)  # model initialisations per batch
    restarts: int = Field(4, ge=1)  # attack restarts; the best by the attacker's own gradient loss is kept
    steps: int | None = Field(None, ge=1)  # default: the attack's own (DLG 300)
    against_configurations: bool = True  # attack what the aggregator saw in each configuration
    masks: tuple[Literal["sensitivity", "magnitude", "random"], ...] = ()  # frontier: masks x ratios
    ratios: tuple[float, ...] = ()
    sensitivity_samples: int = Field(16, ge=1)
    batch_sizes: tuple[int, ...] = ()  # several victim batch sizes (overrides batch_size)
    threats: tuple[ThreatSpec, ...] = (ThreatSpec(),)
    attackers: tuple[Literal["mask-aware", "fedml-he-zeros", "fedml-he-noise"], ...] = ("mask-aware",)
    mask_sources: tuple[Literal["sample", "local", "global"], ...] = ("local",)  # data-dependent masks
    success_ssim: float = Field(0.6, ge=-1, le=1)  # an image counts as recovered at or above this SSIM
    workers: int | None = Field(None, ge=1)  # restart worker processes (None: one per available core)
    device: Literal["auto", "cpu", "cuda"] = "auto"
