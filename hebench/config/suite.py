"""Suite files: YAML validated into frozen, typed objects.

Every error names the file, the field and the fix. ``--set a.b=c`` overrides
apply before validation (list items by index: ``configurations.0.adapter=...``).
"""

from __future__ import annotations

import hashlib
import json
import math
import reprlib
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator

from hebench.config.faults import FaultsSpec
from hebench.config.link_profiles import get_profile
from hebench.config.steady import warmup_rounds
from hebench.errors import HebenchError, SuiteError
from hebench.protections import ModeSpec, get_mode, mode_names
from hebench.protections.dp.spec import DPSpec
from hebench.protections.params import ModeParams
from hebench.protections.selective.spec import SelectiveSpec
from hebench.protections.threats import Adversary, NotDefined, Outcome, Strategy

AUTO_POOL_ABOVE = 8  # runtime.hosting: auto gives each client its own process up to this many clients
DATASETS = ("digits", "natural", "tokens", "femnist", "mnist", "emnist", "cifar10", "cifar100")
MODELS = ("cnn_dropout", "lenet", "mlp", "resnet18", "resnet50", "vit_small", "bert_base")


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class DataSpec(_Frozen):
    dataset: Literal["digits", "natural", "tokens", "femnist", "mnist", "emnist", "cifar10", "cifar100"] = "digits"
    clients: int | Literal["all"] = 3  # femnist: "all": every writer a client (LEAF)
    split: Literal["iid", "dirichlet"] = "iid"  # ignored by femnist, which is split by writer
    alpha: float = Field(0.5, gt=0)
    test_fraction: float = Field(0.2, gt=0, lt=1)
    images_per_client: int | None = Field(None, ge=1)  # FedNIC: 1,600
    min_per_client: int = Field(2, ge=1)  # split datasets: each client's fewest samples (1 allows more clients)
    path: str | None = None  # local copy (femnist: LEAF or TFF folder; torchvision: root)
    sample: bool = False  # femnist: the small real sample shipped in datasets/femnist-sample (offline)
    download: bool = False  # torchvision sets: allow downloading

    @field_validator("clients", mode="before")
    @classmethod
    def _count_or_all(cls, value: Any) -> int | str:
        if value == "all":
            return value
        if isinstance(value, str) and value.strip().isdigit():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"Input should be a valid integer of at least 1, or 'all' (FEMNIST writers): {value!r}")
        return value

    @model_validator(mode="after")
    def _all_writers(self) -> DataSpec:
        if self.clients == "all" and self.dataset != "femnist":
            raise ValueError(
                f"clients: all takes every FEMNIST writer as a client; {self.dataset} is split into N: set clients: N"
            )
        if self.sample and (self.dataset != "femnist" or self.path is not None):
            raise ValueError(
                "sample: true reads the FEMNIST sample shipped with hebench: use it with dataset: femnist and no path"
            )
        return self


class ModelSpec(_Frozen):
    # resnet50, vit_small, bert_base: randomly initialised (no weights can be downloaded): cost, not accuracy
    name: Literal["cnn_dropout", "lenet", "mlp", "resnet18", "resnet50", "vit_small", "bert_base"] = "mlp"
    hidden: int = Field(16, ge=1)  # mlp only


class TrainingSpec(_Frozen):
    rounds: int = Field(3, ge=1)
    clients_per_round: int | None = Field(None, ge=1)  # None: every client
    local_epochs: int = Field(1, ge=1)
    local_steps: int | None = Field(None, ge=1)  # overrides local_epochs (FedNIC: 1 step of 32 images)
    batch_size: int = Field(32, ge=1)
    optimizer: Literal["sgd", "adam"] = "sgd"
    lr: float = Field(0.05, gt=0)
    momentum: float = Field(0.0, ge=0, lt=1)
    key_rotation_rounds: int | None = Field(None, ge=1)  # new keys every K rounds (None: one key set per run)
    target_accuracy: float | None = None  # time-to-accuracy: the first round whose global accuracy reaches this
    # faults (docs/protocol.md "Dropouts and stragglers"): a client whose upload (compute + its link) misses it is late
    round_deadline_s: float | None = None  # None: no deadline
    min_clients: int | None = None  # fewer arrivals than this: the round is skipped (the global model unchanged)
    overselect: float = 1.0  # select ceil(clients_per_round * overselect) clients, so enough arrive

    @field_validator("round_deadline_s")
    @classmethod
    def _positive_deadline(cls, value: float | None) -> float | None:
        if value is not None and not value > 0:
            raise ValueError(f"round_deadline_s must be positive seconds, got {value}: write e.g. 30, or leave it out")
        return value

    @field_validator("min_clients")
    @classmethod
    def _at_least_one(cls, value: int | None) -> int | None:
        if value is not None and value < 1:
            raise ValueError(f"min_clients must be at least 1, got {value}: write e.g. 2, or leave it out")
        return value

    @field_validator("overselect")
    @classmethod
    def _overselect(cls, value: float) -> float:
        if not value >= 1:
            raise ValueError(f"overselect is a factor of at least 1 (1: no over-selection), got {value}")
        return value

    def selected_count(self, clients: int) -> int:
        """How many clients a round selects: ``clients_per_round`` (every client when unset) times
        ``overselect``, rounded up, at most ``clients``."""
        base = self.clients_per_round or clients
        return min(clients, math.ceil(base * self.overselect - 1e-9))

    @field_validator("target_accuracy")
    @classmethod
    def _a_fraction(cls, value: float | None) -> float | None:
        if value is not None and not 0 < value <= 1:
            raise ValueError(f"target_accuracy is a fraction of test samples in (0, 1], got {value}: write e.g. 0.9")
        return value


class TEESpec(_Frozen):
    """A *modelled* TEE row: costs of this configuration's measured run scaled by a published linear model.

    ``coefficients`` is a YAML file of overhead coefficients per mechanism (none is shipped: see
    docs/dp-tls-tee.md); ``mechanisms`` picks which of them are applied.
    """

    coefficients: str
    mechanisms: tuple[str, ...] = Field(min_length=1)


class LinkSpec(_Frozen):
    """An access link: rates in Mbit/s (10^6 bit/s), one-way delay and jitter in ms, loss as a fraction of
    packets. ``profile`` fills every figure from :mod:`hebench.config.link_profiles`; keys given beside it override
    them. A rate left out is not limited."""

    profile: str | None = None
    uplink_mbit: float | None = None
    downlink_mbit: float | None = None
    delay_ms: float | None = None
    jitter_ms: float | None = None
    loss: float | None = None

    @field_validator("profile")
    @classmethod
    def _known_profile(cls, value: str | None) -> str | None:
        if value is not None:
            get_profile(value)  # ValueError names the profiles there are
        return value

    @field_validator("uplink_mbit", "downlink_mbit")
    @classmethod
    def _positive_rate(cls, value: float | None, info: ValidationInfo) -> float | None:
        if value is not None and not value > 0:
            raise ValueError(
                f"{info.field_name} must be a positive rate in Mbit/s, got {value}: write e.g. 10, "
                "or leave it out for a link without a rate limit"
            )
        return value

    @field_validator("delay_ms", "jitter_ms")
    @classmethod
    def _non_negative_time(cls, value: float | None, info: ValidationInfo) -> float | None:
        if value is not None and value < 0:
            raise ValueError(f"{info.field_name} is a one-way time in ms and cannot be negative, got {value}")
        return value

    @field_validator("loss")
    @classmethod
    def _loss_fraction(cls, value: float | None) -> float | None:
        if value is not None and not 0 <= value < 1:
            raise ValueError(f"loss is a fraction of packets in [0, 1), got {value}: write e.g. 0.01 for 1 %")
        return value

    def figures(self) -> dict[str, float | None]:
        """The link's figures: the profile's, overridden by the keys given (None: not limited / none)."""
        base: dict[str, float | None] = dict.fromkeys(_LINK_FIGURES)
        if self.profile is not None:
            prof = get_profile(self.profile)
            base = {k: getattr(prof, k) for k in _LINK_FIGURES}
        return {k: getattr(self, k) if getattr(self, k) is not None else base[k] for k in _LINK_FIGURES}

    @property
    def label(self) -> str:
        """The profile's name when nothing overrides it, else the figures (``up 5/down 20 Mbit/s, 2 ms``)."""
        if self.profile is not None and all(getattr(self, k) is None for k in _LINK_FIGURES):
            return self.profile
        f = self.figures()
        if f["uplink_mbit"] is None and f["downlink_mbit"] is None and not f["delay_ms"] and not f["loss"]:
            return "unlimited"
        up = "∞" if f["uplink_mbit"] is None else f"{f['uplink_mbit']:g}"
        down = "∞" if f["downlink_mbit"] is None else f"{f['downlink_mbit']:g}"
        out = f"up {up}/down {down} Mbit/s"
        out += f", {f['delay_ms']:g} ms" if f["delay_ms"] else ""
        out += f", loss {f['loss']:g}" if f["loss"] else ""
        return out


_LINK_FIGURES = ("uplink_mbit", "downlink_mbit", "delay_ms", "jitter_ms", "loss")


class TierSpec(_Frozen):
    """A share of the clients on their own link (``link``, or a named ``profile``), computing ``compute_slowdown``
    times slower than this machine (a phone beside desktops); without either, the tier keeps ``clients``' link."""

    share: float
    link: LinkSpec | None = None
    profile: str | None = None
    compute_slowdown: float = 1.0

    @field_validator("share")
    @classmethod
    def _share(cls, value: float) -> float:
        if not 0 < value <= 1:
            raise ValueError(f"share is a fraction of the clients in (0, 1], got {value}")
        return value

    @field_validator("profile")
    @classmethod
    def _known_profile(cls, value: str | None) -> str | None:
        if value is not None:
            get_profile(value)
        return value

    @field_validator("compute_slowdown")
    @classmethod
    def _slowdown(cls, value: float) -> float:
        if not value >= 1:
            raise ValueError(
                f"compute_slowdown must be at least 1 (a tier can only compute slower than this machine), got {value}"
            )
        return value

    @model_validator(mode="after")
    def _link_or_profile(self) -> TierSpec:
        if self.link is not None and self.profile is not None:
            raise ValueError("a tier takes link or profile, not both: write link: {profile: NAME, ...} to adjust one")
        return self

    def link_spec(self, default: LinkSpec) -> LinkSpec:
        """This tier's link (``default``: the network's ``clients`` link, for a tier that names none)."""
        if self.profile is not None:
            return LinkSpec(profile=self.profile)
        return self.link if self.link is not None else default


class NetworkSpec(_Frozen):
    """The links every party's traffic crosses (see docs/networks.md).

    ``clients``: each client's access link (``tiers`` split the clients over several); ``server``: the link of
    each server-side party (aggregator, share holders, key authority), shared by all its clients' traffic.
    ``emulation``: ``userspace`` paces every frame in hebench's stream layer; ``kernel`` puts each party in a
    network namespace behind veth pairs shaped by ``tc``; ``model`` runs on loopback and computes the
    transfer times from the recorded bytes (modelled, never measured).

    A key left out (None) is inherited: a configuration's from the suite's network, the suite's from the
    defaults (unlimited links, no tiers, ``userspace``); :meth:`resolved` fills them in.
    """

    clients: LinkSpec | None = None
    server: LinkSpec | None = None
    tiers: tuple[TierSpec, ...] | None = None
    emulation: Literal["userspace", "kernel", "model"] | None = None

    @field_validator("tiers")
    @classmethod
    def _shares_add_up(cls, tiers: tuple[TierSpec, ...] | None) -> tuple[TierSpec, ...] | None:
        total = sum(t.share for t in tiers or ())
        if tiers and abs(total - 1.0) > 1e-6:
            raise ValueError(f"the tiers' shares add up to {total:g}, not 1: adjust the share of each tier")
        return tiers

    def over(self, base: NetworkSpec | None) -> NetworkSpec:
        """This spec's keys over ``base``'s (a configuration's network over the suite's)."""
        if base is None:
            return self
        given = {k: getattr(self, k) for k in type(self).model_fields if getattr(self, k) is not None}
        return base.model_copy(update=given)

    def resolved(self) -> NetworkSpec:
        """Every key set: the ones left out take their defaults."""
        return NetworkSpec(
            clients=self.clients or LinkSpec(),
            server=self.server or LinkSpec(),
            tiers=self.tiers or (),
            emulation=self.emulation or "userspace",
        )

    @property
    def label(self) -> str:
        """The clients' link, or the tiers' links with their shares (``lte 60%+home-broadband 40%``)."""
        clients = self.clients or LinkSpec()
        if not self.tiers:
            return clients.label
        return "+".join(f"{t.link_spec(clients).label} {t.share:.0%}" for t in self.tiers)


class Configuration(_Frozen):
    name: str | None = None
    mode: str = "raw"  # a registered mode: see hebench.protections
    adapter: str = "plain"
    params: dict[str, Any] = Field(default_factory=dict)
    packing: Literal["flat", "per-layer"] = "flat"
    selective: SelectiveSpec | None = None
    dp: DPSpec | None = None  # differential privacy on the clients' updates
    transport: Literal["tcp", "tls"] = "tcp"  # tls: every party's channels over mutual TLS
    tee: TEESpec | None = None  # a modelled (never measured) TEE cost row from this configuration's run
    network: NetworkSpec | None = None  # keys given here override the suite's network (None: the suite's)
    faults: FaultsSpec | None = None  # keys given here override the suite's faults (None: the suite's)

    @field_validator("params")
    @classmethod
    def _adapter_accepts(cls, params: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        """Build the adapter's parameters now (no keys): a bad or insecure set fails the suite, not the run."""
        from hebench.crypto.registry import adapter_names, check_params

        adapter, mode = info.data.get("adapter"), info.data.get("mode")
        if mode in mode_names() and get_mode(mode).params_model is not None:
            try:  # the mode's own parameters; its adapter (plain) takes none
                get_mode(mode).parse_params(params)
            except ValidationError as err:
                first = err.errors()[0]
                where = ".".join(str(p) for p in first["loc"])
                raise ValueError(f"mode {mode}: {where + ': ' if where else ''}{first['msg']}") from None
            return params
        if adapter in adapter_names():
            try:
                check_params(adapter, params)
            except HebenchError as err:
                raise ValueError(f"{err.problem}" + (f" (fix: {err.fix})" if err.fix else "")) from None
        return params

    @model_validator(mode="after")
    def _consistent(self) -> Configuration:
        from hebench.crypto.registry import adapter_names

        if self.adapter not in adapter_names():
            raise ValueError(f"unknown adapter '{self.adapter}'; choose one of {', '.join(adapter_names())}")
        if self.mode not in mode_names():
            raise ValueError(f"unknown mode '{self.mode}'; choose one of {', '.join(mode_names())}")
        self.spec.check(self.adapter, self.packing, self.selective is not None)
        if self.selective is not None and self.packing != "flat":
            raise ValueError("selective encryption packs the encrypted coordinates flat: use packing: flat")
        return self

    @property
    def spec(self) -> ModeSpec:
        """This configuration's mode."""
        return get_mode(self.mode)

    @property
    def adapter_params(self) -> dict[str, Any]:
        """The adapter's parameters (none when ``params`` belong to the mode)."""
        return {} if self.spec.params_model is not None else self.params

    @property
    def mode_params(self) -> ModeParams | None:
        """The mode's own parameters, parsed (None: ``params`` are the adapter's)."""
        return self.spec.parse_params(self.params)

    @property
    def label(self) -> str:
        if self.name:
            return self.name
        base = self.mode if self.spec.plain_adapter else f"{self.mode}/{self.adapter}"
        if self.selective is not None:
            sel = self.selective
            base += f"/sel-layers-{'+'.join(sel.layers)}" if sel.mask == "layers" else f"/sel-{sel.mask}-{sel.ratio:g}"
        base += "/per-layer" if self.packing == "per-layer" else ""
        base += f"/{self.dp.tag}" if self.dp is not None else ""
        base += "/tls" if self.transport == "tls" else ""
        base += "/tee-modelled" if self.tee is not None else ""
        base += f"[{params_tag(self.params)}]" if self.params else ""
        own_links = self.network is not None and (self.network.clients is not None or self.network.tiers is not None)
        return base + (f"@{self.network.label}" if own_links and self.network is not None else "")


def params_tag(params: dict[str, Any]) -> str:
    """Parameters in a label: ``key=value`` sorted by key, lists joined by ``+`` (``coeff_mod_bits=60+40+60``)."""

    def value(v: Any) -> str:
        if isinstance(v, (list, tuple)):
            return "+".join(value(x) for x in v)
        return f"{v:g}" if isinstance(v, float) else str(v)

    return ",".join(f"{k}={value(params[k])}" for k in sorted(params))


class OffloadSpec(_Frozen):
    """Where offload engines run. Default: one local engine process per client, on its own cores."""

    engines: tuple[str, ...] = ()  # remote engines "host:port", one per client (started with `hebench engine serve`)
    tls: bool = False  # local engines: mutual TLS with certificates generated into the run folder
    tls_dir: str | None = None  # a `hebench engine certs` folder (required for remote engines)
    engine_cores: tuple[int, ...] | None = None  # default: the last available core
    host_cores: tuple[int, ...] | None = None  # default: the other cores
    chunk_values: int = Field(65536, ge=1)  # values per streamed chunk (host -> engine -> aggregator)
    calibration: str | None = None  # `compare libraries --calibration-out` file from the target device


class ThreatSpec(_Frozen):
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
    strategy: Literal["model-inconsistency", "trap-weights", "dropout-lie"] | None = None  # malicious-aggregator

    @model_validator(mode="after")
    def _adversary_takes(self) -> ThreatSpec:
        takes_k = self.adversary in ("colluding-clients", "share-holders")
        if self.k is not None and not takes_k:
            raise ValueError(f"k counts colluders of colluding-clients or share-holders, not of {self.adversary}")
        if self.adversary == "share-holders" and self.k is None:
            raise ValueError("share-holders needs k, how many of the K share holders collude: set k")
        if (self.strategy is None) == (self.adversary == "malicious-aggregator"):
            raise ValueError(
                "malicious-aggregator needs a strategy (model-inconsistency, trap-weights or dropout-lie)"
                if self.strategy is None
                else f"strategy is how a malicious-aggregator deviates; adversary {self.adversary} has none"
            )
        return self

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
        )


class PrivacySpec(_Frozen):
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


class RuntimeSpec(_Frozen):
    """How the local runtime hosts clients (``hebench run`` without ``--engine flower``).

    ``process``: one OS process per client, isolated as FedNIC's parties are. ``pool``: clients run as
    threads of ``workers`` processes, each keeping its own data, model, keys and connections, each
    charged its own thread's CPU time. ``auto``: one process per client up to ``AUTO_POOL_ABOVE``
    clients, the pool beyond.
    """

    hosting: Literal["auto", "process", "pool"] = "auto"
    workers: int | None = Field(None, ge=1)  # pool processes; default: the cores the run may use
    # values per streamed chunk of an update and of an aggregate (whole ciphertexts; offload: offload.chunk_values)
    chunk_values: int = Field(65536, ge=1)
    # finished chunks of an aggregate the aggregator keeps in memory; the rest wait in a temporary file until sent
    aggregate_memory_mb: int = Field(256, ge=0)

    @model_validator(mode="after")
    def _workers_need_pool(self) -> RuntimeSpec:
        if self.workers is not None and self.hosting == "process":
            raise ValueError("workers sizes the pool; with hosting: process every client has its own process")
        return self


class MeasureSpec(_Frozen):
    decryption_error: bool = True  # compare the decrypted aggregate with plaintext FedAvg
    transcripts: bool = False  # keep every byte each party received (security tests)
    timeout_s: float = Field(900.0, gt=0)  # longest wait for one message (a round's budget)
    setup_timeout_s: float = Field(300.0, gt=0)  # every party connected, keyed and ready within this
    # rounds measured and recorded but kept out of headline figures; None: 1 when training.rounds >= 2, else 0
    warmup_rounds: int | None = Field(None, ge=0)

    def warmup_for(self, rounds: int) -> int:
        """The warm-up rounds of a run of ``rounds`` rounds (at least one steady round is always left)."""
        return warmup_rounds(self.warmup_rounds, rounds)


class Suite(_Frozen):
    name: str
    description: str = ""
    seed: int = 0
    data: DataSpec = DataSpec()
    model: ModelSpec = ModelSpec()
    training: TrainingSpec = TrainingSpec()
    configurations: tuple[Configuration, ...] = Field(min_length=1)
    offload: OffloadSpec = OffloadSpec()
    privacy: PrivacySpec | None = None
    measure: MeasureSpec = MeasureSpec()
    runtime: RuntimeSpec = RuntimeSpec()
    network: NetworkSpec | None = None  # every party's links (None: loopback, unshaped); a configuration may override
    faults: FaultsSpec | None = None  # clients that drop out or lag (None: none); a configuration may override

    def faults_for(self, config: Configuration) -> FaultsSpec | None:
        """The faults ``config`` runs with, every key set (the suite's with ``config.faults``' keys over them);
        None: no client drops or lags."""
        if config.faults is None and self.faults is None:
            return None
        spec = config.faults.over(self.faults) if config.faults is not None else self.faults
        assert spec is not None
        resolved = spec.resolved(self.seed)
        return resolved if resolved.active else None

    def network_for(self, config: Configuration) -> NetworkSpec | None:
        """The links ``config`` runs on, every key set: the suite's ``network`` with the keys ``config.network``
        gives over it (``clients``, ``server``, ``tiers``, ``emulation``), so ``--set network.emulation=model``
        reaches every configuration that did not set its own; None: loopback."""
        if config.network is None and self.network is None:
            return None
        spec = config.network.over(self.network) if config.network is not None else self.network
        assert spec is not None
        return spec.resolved()

    def faults_tolerated(self, config: Configuration) -> bool:
        """``config``'s aggregator finishes rounds with the clients that arrived, so a client process that dies is
        a dropout of that round (the other modes' runs still end with it)."""
        return config.spec.survives_client_loss

    def rounds_may_skip(self, config: Configuration) -> bool:
        """A round of ``config`` may end without an aggregate (too few arrived, or a client lost mid-upload), so
        clients keep the round's global model until it comes: faults, a deadline, or a mode that survives a
        client process that dies (even with no ``faults:`` block)."""
        return (
            self.faults_for(config) is not None
            or self.training.round_deadline_s is not None
            or self.faults_tolerated(config)
        )

    @model_validator(mode="after")
    def _consistent(self) -> Suite:
        per_round = self.training.clients_per_round
        if self.data.clients == "all":  # checked against the writers found, when the data is loaded
            return self._checked()
        if per_round is not None and per_round > self.data.clients:
            raise ValueError(f"training.clients_per_round={per_round} exceeds data.clients={self.data.clients}")
        remote = self.offload.engines
        if remote and len(remote) != self.data.clients:
            raise ValueError(f"offload.engines lists {len(remote)} engines for {self.data.clients} clients")
        if remote and any(c.transport == "tls" and c.spec.needs_engines for c in self.configurations):
            raise ValueError(
                "transport: tls makes this run's party certificates for local engines only: "
                "leave offload.engines empty, or use transport: tcp with remote engines"
            )
        if remote and not self.offload.tls_dir:
            raise ValueError("remote offload engines need mutual TLS: set offload.tls_dir (hebench engine certs DIR)")
        return self._checked()

    def _checked(self) -> Suite:
        warmup, rounds = self.measure.warmup_rounds, self.training.rounds
        if warmup is not None and warmup >= rounds:
            raise ValueError(
                f"measure.warmup_rounds={warmup} leaves no steady round of training.rounds={rounds}; "
                "lower it or add rounds"
            )
        if self.data.clients != "all":  # a mode's own limits on the clients of one round (secagg's modulus)
            per_round = self.training.clients_per_round or self.data.clients
            for i, config in enumerate(self.configurations):
                if config.mode_params is not None:
                    try:
                        config.mode_params.check_clients(per_round)
                    except ValueError as err:
                        raise ValueError(f"configurations.{i}.params: {err}") from None
        self._check_threats()
        self._check_faults()
        labels = [c.label for c in self.configurations]
        dupes = sorted({x for x in labels if labels.count(x) > 1})
        if dupes:
            raise ValueError(
                f"two or more configurations have the label {', '.join(repr(d) for d in dupes)} (same mode, adapter, "
                "params, packing and selective settings); give each a distinct name: field"
            )
        return self

    def _check_faults(self) -> None:
        """``min_clients`` fits the round, and every configuration with faults can finish rounds with survivors."""
        least = self.training.min_clients
        if least is not None and self.data.clients != "all":
            per_round = self.training.selected_count(self.data.clients)
            if least > per_round:
                raise ValueError(
                    f"training.min_clients={least} is above the {per_round} clients a round selects: "
                    "lower min_clients, or raise clients_per_round or overselect"
                )
        for i, config in enumerate(self.configurations):
            if self.faults_for(config) is not None and not config.spec.survives_dropout:
                survivors = ", ".join(mode_names(lambda spec: spec.survives_dropout))
                raise ValueError(
                    f"configurations.{i} ({config.label}): mode {config.mode} does not yet finish rounds with the "
                    f"survivors in the running system; with faults use {survivors}, or set "
                    f"configurations.{i}.faults: {{dropout: 0, stragglers: {{share: 0}}}}"
                )

    def _check_threats(self) -> None:
        """Each threat model fits every configuration whose mode defines it, and at least one defines it."""
        if self.privacy is not None and self.data.dataset == "tokens":
            raise ValueError(
                "privacy: the attacks reconstruct images, and data tokens holds generated token ids (cost only); "
                "attack an image dataset (natural, digits, femnist, ...) or remove the privacy section"
            )
        if self.privacy is None or not self.privacy.against_configurations or self.data.clients == "all":
            return
        per_round = self.training.clients_per_round or self.data.clients
        attacked = [(i, c) for i, c in enumerate(self.configurations) if c.tee is None]
        for t, threat in enumerate(self.privacy.threats):
            undefined = []
            for i, config in attacked:
                try:
                    threat.outcome(config, per_round)
                except NotDefined as err:
                    undefined.append(f"configurations.{i} ({config.label}): {err}")
                except ValueError as err:
                    where = f"privacy.threats.{t} against configurations.{i} ({config.label})"
                    raise ValueError(f"{where}: {err}") from None
            if attacked and len(undefined) == len(attacked):
                raise ValueError(f"privacy.threats.{t}: no configuration defines it; {undefined[0]}")

    def with_clients(self, count: int) -> Suite:
        """This suite with ``data.clients: all`` resolved to the ``count`` clients the data holds (validated)."""
        if self.data.clients != "all":
            return self
        raw = self.model_dump(mode="json")
        raw["data"]["clients"] = count
        try:
            return Suite.model_validate(raw)
        except ValidationError as err:
            problem = err.errors()[0]["msg"].removeprefix("Value error, ")
            raise SuiteError(f"with data.clients: all ({count} writers): {problem}", "lower that field") from None

    def digest(self) -> str:
        """sha256 of the validated suite (overrides included), for provenance."""
        canonical = json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()


def apply_overrides(raw: dict[str, Any], overrides: list[str], source: str) -> dict[str, Any]:
    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise SuiteError(f"--set '{item}' is not KEY=VALUE", "write e.g. --set training.rounds=2")
        node: Any = raw
        *parents, leaf = key.split(".")
        for depth, part in enumerate([*parents, leaf]):
            where = ".".join([*parents, leaf][:depth]) or "the suite"
            if isinstance(node, list):
                try:
                    index = int(part)
                    node[index]  # the index must exist
                except (ValueError, IndexError):
                    raise SuiteError(
                        f"--set {key}: {where} in {source} has no list item '{part}'",
                        f"use an index from 0 to {len(node) - 1}",
                    ) from None
            elif not isinstance(node, dict):
                raise SuiteError(
                    f"--set {key}: {where} in {source} is {type(node).__name__} {reprlib.repr(node)}, not a mapping",
                    f"set {where} itself, or a key of a mapping",
                )
            if depth < len(parents):
                node = node[index] if isinstance(node, list) else node.setdefault(part, {})
        try:
            parsed = yaml.safe_load(value)
        except yaml.YAMLError as err:
            problem = str(err).replace("\n", " ")
            raise SuiteError(
                f"--set {key}: the value {value!r} is not valid YAML ({problem})",
                "quote the value, e.g. --set name='\"a: b\"'",
            ) from None
        if isinstance(node, list):
            node[index] = parsed
        else:
            node[leaf] = parsed
    return raw


def parse_suite(raw: Any, source: str = "<suite>", overrides: list[str] | None = None) -> Suite:
    if not isinstance(raw, dict):
        raise SuiteError(
            f"{source}: a suite must be a YAML mapping, got {type(raw).__name__}", "see suites/quickstart.yaml"
        )
    raw = apply_overrides(raw, overrides or [], source)
    try:
        return Suite.model_validate(raw)
    except ValidationError as err:
        found = err.errors()
        # a bad list item also empties the list: report the cause, not the consequence
        found = [e for e in found if e["type"] != "too_short"] or found
        first = found[0]
        field = ".".join(str(p) for p in first["loc"]) or "(top level)"
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        msg = first["msg"].removeprefix("Value error, ")
        if first["type"] == "extra_forbidden":
            msg = "unknown field"
        raise SuiteError(
            f"{source}: field '{field}': {msg}{more}",
            "fix that field (see suites/quickstart.yaml for a complete example)",
        ) from None


def load_suite(path: str | Path, overrides: list[str] | None = None) -> Suite:
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SuiteError(f"suite file {path} does not exist", "pass a path such as suites/quickstart.yaml") from None
    except IsADirectoryError:
        raise SuiteError(
            f"{path} is a folder, not a suite file", f"pass a YAML file inside it, e.g. {path}/NAME.yaml"
        ) from None
    except UnicodeDecodeError as err:
        raise SuiteError(
            f"{path} is not a text file (byte {err.start} is not UTF-8)", "pass a suite YAML file"
        ) from None
    except OSError as err:
        raise SuiteError(
            f"cannot read suite file {path}: {err.strerror or err}", "check the path and its permissions"
        ) from None
    except yaml.YAMLError as err:
        raise SuiteError(f"{path} is not valid YAML: {err}", "fix the YAML syntax at the position shown") from None
    except RecursionError:
        raise SuiteError(f"{path} nests too deeply to be a suite", "pass a suite YAML file") from None
    return parse_suite(raw, str(path), overrides)
