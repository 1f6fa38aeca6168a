"""One frozen class per record kind, registered by kind.

A results file is one JSON object per line: ``{"schema", "kind", "time", ...fields}``.
``record_from_json`` turns a (migrated) line into its typed record;
``Record.to_json`` writes it back. Optional fields default to None and are
left out of the line when None.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

from hebench.errors import RecordError
from hebench.protections.threats import threat_key
from hebench.results.fields import EngineReport, Measured, Phase, Phases, Struct

SCHEMA = "hebench.results/2"

__all__ = [
    "SCHEMA",
    "AttackCampaignRecord",
    "AttackRecord",
    "AttackSummaryRecord",
    "ConfigurationRecord",
    "EngineReport",
    "EnvironmentRecord",
    "FlowerRunRecord",
    "HubNoteRecord",
    "KeyServiceRecord",
    "KeygenRecord",
    "LibraryBenchmarkRecord",
    "MaskAgreementRecord",
    "ModelledCostRecord",
    "ModelledRoundRecord",
    "PartyRoundRecord",
    "PartySetupRecord",
    "Phase",
    "Phases",
    "PoolWorkerRecord",
    "Record",
    "RoundRecord",
    "RunFailedRecord",
    "RunRecord",
    "SecurityNoteRecord",
    "TextAttackRecord",
    "TextAttackSummaryRecord",
    "TimeToAccuracyRecord",
    "kinds",
    "record_class",
    "record_from_json",
]


@dataclass(frozen=True, kw_only=True)
class Record(Struct):
    """Base of every record: its kind (a class constant) and when it was written."""

    time: float | None = None  # Unix time; the writer sets it

    kind: ClassVar[str] = ""

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, **super().to_json()}


_REGISTRY: dict[str, type[Record]] = {}
R = TypeVar("R", bound=type[Record])


def _register(kind: str) -> Callable[[R], R]:
    def add(cls: R) -> R:
        cls.kind, cls._name = kind, kind
        _REGISTRY[kind] = cls
        return cls

    return add


def kinds() -> tuple[str, ...]:
    """Every registered record kind."""
    return tuple(_REGISTRY)


def record_class(kind: str) -> type[Record]:
    try:
        return _REGISTRY[kind]
    except KeyError:
        raise RecordError(f"unknown record kind '{kind}'", f"use one of: {', '.join(sorted(_REGISTRY))}") from None


def record_from_json(data: Mapping[str, Any], strict: bool = False) -> Record:
    """The typed record for a JSON line (already migrated to :data:`SCHEMA`)."""
    kind = data.get("kind")
    if not isinstance(kind, str):
        raise RecordError("a record without a 'kind'", "every line needs a kind")
    return record_class(kind).from_json(data, strict=strict)


# --- a run and its configurations ---------------------------------------------------------------


@_register("run")
@dataclass(frozen=True, kw_only=True)
class RunRecord(Record):
    """The start of a run (or of a resumed run): the validated suite, environment and data."""

    suite: Mapping[str, Any]
    suite_hash: str
    environment: Mapping[str, Any]
    data: Mapping[str, Any]
    resumed: bool = False


@_register("environment")
@dataclass(frozen=True, kw_only=True)
class EnvironmentRecord(Record):
    """The environment of a command that is not a run (``compare libraries``)."""

    environment: Mapping[str, Any]
    command: str


@_register("configuration")
@dataclass(frozen=True, kw_only=True)
class ConfigurationRecord(Record):
    """What a configuration's records are about, written before its first round."""

    config: str  # the configuration's label
    mode: str  # raw, host-he, offload
    adapter: str
    params: Mapping[str, Any]
    packing: str = "flat"
    selective: Mapping[str, Any] | None = None  # the suite's SelectiveSpec as JSON; None: not selective
    selective_recorded: bool = True  # False: an early v1 writer left `selective` out (see the run's suite)
    model: str
    parameters: int  # model parameters
    # values in one update: the trainable parameters (LoRA: the adapters; None: a record from before adapters,
    # when every parameter travelled)
    update_parameters: int | None = None
    fine_tuning: Mapping[str, Any] | None = None  # language models: {kind: lora, rank, ...} or {kind: full}
    model_origin: str | None = None  # where its starting weights come from (ModelSpec.origin); None: not recorded
    start_round: int = 0
    runtime: str = "hebench"  # hebench (local processes) or flower
    superlink: str | None = None  # flower only
    dp: Mapping[str, Any] | None = None  # the suite's DPSpec as JSON; None: no differential privacy
    transport: str = "tcp"  # tcp, or tls (every party's channels over mutual TLS)
    tee: Mapping[str, Any] | None = None  # the suite's TEESpec as JSON: a modelled TEE row (never measured)
    mode_security: Mapping[str, Any] | None = None  # a protocol's own strength (secagg's mask work factor)
    network: Mapping[str, Any] | None = None  # the links it ran on (label, emulation, server, tiers); None: loopback


# --- parties ----------------------------------------------------------------------------------


@_register("keygen")
@dataclass(frozen=True, kw_only=True)
class KeygenRecord(Record, Measured):
    """One key generation by the key authority (one per key epoch)."""

    config: str
    role: str = "key_authority"
    epoch: int = 0
    key_id: str
    info: Mapping[str, Any]  # the adapter's parameters (scheme, ring degree, security bits...)
    key_bytes: Mapping[str, int]
    holders: int
    runtime: str | None = None
    bytes_sent: int | None = None  # secret key sets pushed to holders


@_register("party_setup")
@dataclass(frozen=True, kw_only=True)
class PartySetupRecord(Record, Measured):
    """A party's start-up (connecting, receiving keys)."""

    config: str
    role: str
    client: int | None = None
    process_cpu_s: float | None = None
    runtime: str | None = None


@_register("mask_agreement")
@dataclass(frozen=True, kw_only=True)
class MaskAgreementRecord(Record, Measured):
    """The selective-encryption mask the clients agreed on (its digest), and what agreeing cost."""

    config: str
    role: str
    client: int | None = None
    engine: EngineReport | None = None
    encrypted_fraction: float | None = None
    mask_sha256: str | None = None
    bytes_sent: int | None = None
    bytes_received: int | None = None
    epoch: int | None = None
    process_cpu_s: float | None = None
    host_engine_bytes: int | None = None
    runtime: str | None = None


# the global model's quality, as a task evaluates it (hebench.models.task): each a field of round records
QUALITY_FIELDS = ("accuracy", "loss", "perplexity")


@_register("party_round")
@dataclass(frozen=True, kw_only=True)
class PartyRoundRecord(Record, Measured):
    """One party's round: a client's (training, encryption, ...) or the aggregator's."""

    config: str
    role: str  # client or aggregator
    round: int
    epoch: int | None = None  # key epoch
    bytes_sent: int = 0
    bytes_received: int = 0
    runtime: str | None = None
    # clients
    client: int | None = None
    affinity: tuple[int, ...] | None = None
    train_loss: float | None = None
    accuracy: float | None = None  # client 0 evaluates the new global model
    loss: float | None = None  # language models: held-out next-token loss
    perplexity: float | None = None  # language models: exp(held-out next-token loss)
    engine: EngineReport | None = None  # offload: the engine's work for this client
    host_engine_bytes: int | None = None  # Flower offload: host <-> engine traffic
    process_cpu_s: float | None = None  # Flower: all CPU of the round's ClientApp processes
    # aggregator
    selected: tuple[int, ...] | None = None
    weights: Mapping[str, float] | None = None
    update_bytes: Mapping[str, int] | None = None
    aggregate_bytes: int | None = None
    plain_parts: int | None = None
    round_wall_s: float | None = None
    flower_round_wall_s: float | None = None  # includes Flower's polling: never compared with local runs
    holds_secret_key: bool | None = None
    dp_epsilon: float | None = None  # sample-level DP: this client's ε after this round (at the suite's δ)
    dp_accountant: str | None = None  # sample-level DP: Opacus' accountant that gave dp_epsilon (rdp, prv)
    dp_sample_rate: float | None = None  # sample-level DP: the sampling rate q charged per step
    dp_steps: int | None = None  # sample-level DP: noisy steps charged so far (earlier attempts and runs included)
    dp_delta: float | None = None  # sample-level DP: the δ of dp_epsilon
    clipped_values: int | None = None  # adapters with a range: this client's values saturated at ±clip this round
    range_scale_max: float | None = None  # the largest per-tensor range scale this round (hebench.fl.value_range)
    # faults (hebench.faults): the aggregator's view of the round, and each client's own drawn fault
    arrived: tuple[int, ...] | None = None  # selected clients whose update is in the aggregate
    dropped: Mapping[str, str] | None = None  # client -> phase it left at (before_train, after_train, ..., late)
    skipped: bool | None = None  # fewer than training.min_clients arrived: no aggregate, global model unchanged
    skip_reason: str | None = None  # a round skipped because its protection could not recover (secagg's shares)
    dropout_phase: str | None = None  # a client that left this round: where (late: missed round_deadline_s)
    slowdown: float | None = None  # a straggler: its compute took this many times as long
    upload_link_s: float | None = None  # with a deadline on a shaped link: the upload's time on it, counted as late

    @property
    def trained(self) -> bool:
        """A client that trained this round (not one only receiving the aggregate)."""
        return self.role == "client" and "train" in self.phases


@_register("round")
@dataclass(frozen=True, kw_only=True)
class RoundRecord(Record):
    """A completed round: the global model's quality and the decryption error against plaintext FedAvg."""

    config: str
    round: int
    accuracy: float | None = None
    loss: float | None = None  # language models: held-out next-token loss
    perplexity: float | None = None  # language models: exp(held-out next-token loss)
    max_abs_error: float | None = None
    mean_abs_error: float | None = None
    load_avg: float | None = None  # the machine's 1-minute load average when the round completed
    # faults (hebench.faults): how many clients the round selected, how many arrived, which left and where
    selected: int | None = None
    arrived: int | None = None
    dropped: Mapping[str, str] | None = None
    skipped: bool | None = None
    skip_reason: str | None = None


@_register("time_to_accuracy")
@dataclass(frozen=True, kw_only=True)
class TimeToAccuracyRecord(Record):
    """The first round whose global accuracy reached ``training.target_accuracy``, and the wall time to it
    (the aggregator's round walls added up from round 0; on the ``model`` backend, the modelled ones)."""

    config: str
    target: float
    round: int
    accuracy: float
    wall_s: float
    link: str | None = None  # the network's label; None: loopback
    modelled: bool = False  # True: wall_s adds modelled round times (emulation: model), never measured ones


@_register("modelled_round")
@dataclass(frozen=True, kw_only=True)
class ModelledRoundRecord(Record):
    """A round's wall time on the configuration's links as the transfer model predicts it (``emulation: model``):
    the round measured on loopback plus the modelled transfers. Modelled, never measured."""

    config: str
    round: int
    link: str
    modelled: bool = True
    loopback_round_wall_s: float
    round_wall_s: float
    transfer_s: float  # the modelled transfer time on the round's critical path
    upload_s: float | None = None
    download_s: float | None = None
    latency_s: float | None = None


@_register("run_failed")
@dataclass(frozen=True, kw_only=True)
class RunFailedRecord(Record):
    """Why a run stopped early (an error, a party that died, Ctrl-C): written before the error is raised."""

    error: str  # the exception's type, e.g. PartyError, KeyboardInterrupt
    problem: str
    fix: str = ""
    config: str | None = None  # the configuration running when it failed (None: before or between them)
    round: int | None = None  # the round it was in (None: set-up, or between configurations)


@_register("party_lost")
@dataclass(frozen=True, kw_only=True)
class PartyLostRecord(Record):
    """A client process (or its offload engine) that died or failed mid-run in a mode that goes on without it:
    a dropout from ``round`` on, and why (its own error, e.g. a secagg client refusing a model it was not
    sent, or its exit code when it was killed), so the reason is kept, not absorbed."""

    config: str
    role: str  # client-N or engine-N
    round: int | None  # the round the runner was collecting when it saw the loss
    problem: str
    fix: str = ""


@_register("flower_run")
@dataclass(frozen=True, kw_only=True)
class FlowerRunRecord(Record):
    """The close of one configuration's Flower run."""

    config: str
    holds_secret_key: bool | None = None
    runtime: str | None = None


@_register("hub_note")
@dataclass(frozen=True, kw_only=True)
class HubNoteRecord(Record):
    """Something the Flower hub noticed and carried on from (refused peers: ``count`` of them from ``peer``)."""

    config: str
    problem: str
    runtime: str | None = None
    peer: str | None = None
    count: int = 1


@_register("key_service")
@dataclass(frozen=True, kw_only=True)
class KeyServiceRecord(Record):
    """A Flower run's hub answering key requests (nodes and the server fetch key sets from it, where a local
    key authority pushes them): one configuration's totals, written before its closing ``flower_run``."""

    config: str
    role: str = "key_authority"
    secret_sets: int = 0  # secret key sets sent to clients (host-he)
    public_sets: int = 0  # public key sets sent to the server
    bytes_sent: int = 0  # the key sets' bytes
    cpu_s: float = 0.0  # thread CPU time of answering them (key generation is in the keygen records)
    runtime: str | None = None


@_register("pool_worker")
@dataclass(frozen=True, kw_only=True)
class PoolWorkerRecord(Record):
    """A pool worker's own totals when its clients are done: its process CPU against its clients' threads."""

    config: str
    role: str = "pool_worker"
    worker: str
    clients: tuple[int, ...]
    process_cpu_s: float
    client_thread_cpu_s: float
    peak_rss_bytes: int | None = None
    cpu_accounting: str = "process"


@_register("security_note")
@dataclass(frozen=True, kw_only=True)
class SecurityNoteRecord(Record):
    """Peers refused at a door (e.g. the aggregator at the key holders' door, or sockets that never
    authenticated): ``count`` refusals of one kind from ``peer``, ``problem`` describing the first."""

    config: str
    role: str  # the party that refused it
    door: str
    problem: str
    peer: str | None = None  # the refused peers' address (older runs: not recorded)
    count: int = 1  # refusals this record stands for (older runs: one record per refusal)


# --- attacks and library benchmarks -------------------------------------------------------------


@_register("attack")
@dataclass(frozen=True, kw_only=True)
class AttackRecord(Record):
    """One gradient-inversion attack on one victim batch and model seed."""

    plan: str
    attack: str
    view: str  # raw, he, selective: what the aggregator saw
    image: int
    seed: int
    visible_fraction: float | None = None
    encrypted_fraction: float | None = None
    prior_only: bool | None = None
    grad_loss: float | None = None
    restart_losses: tuple[float, ...] | None = None
    diverged_restarts: int | None = None
    label_accuracy: float | None = None
    mse: float | None = None
    psnr: float | None = None
    ssim: float | None = None
    uqi: float | None = None
    vifp: float | None = None
    msssim: float | None = None
    msssim_upscaled: float | None = None
    attacker: str | None = None  # selective: mask-aware, fedml-he-zeros or fedml-he-noise
    mask_source: str | None = None  # sensitivity masks: sample, local or global
    threat: str | None = None  # one gradient, E local steps, or the average of N clients
    batch_size: int | None = None
    clients: int | None = None
    local_steps: int | None = None
    label_source: str | None = None  # inferred (iDLG), given, or optimised (DLG's soft labels)
    restart_wall_s: tuple[float, ...] | None = None
    restart_cpu_s: tuple[float, ...] | None = None
    restart_steps: tuple[int, ...] | None = None
    restart_batch: tuple[int, ...] | None = None  # restarts optimised together with each (1: serial)
    engine: str | None = None  # batched or serial (records before issue #37: serial)
    device: str | None = None
    ssim_per_image: tuple[float, ...] | None = None
    reused: bool | None = None  # the same attack as another plan's (p = 0 or 1 under several masks)
    # the threat model (hebench.protections.threats); records written before it read as the honest-but-curious
    # aggregator
    adversary: str | None = None  # aggregator, colluding-clients, key-holder, share-holders, malicious-aggregator, ...
    k: int | None = None  # colluders
    strategy: str | None = None  # a malicious aggregator's
    obtains: str | None = None  # what the adversary obtained: every-update, victim-update, sum, ... nothing
    evidence: str | None = None  # the test that shows what it obtains in this mode
    config: str | None = None  # the configuration attacked
    conduit: str | None = None  # the real protocol path the upload went through (None: a simulated view)
    detected: str | None = None  # a defence that stopped the attack (e.g. secagg's model check), in words


@_register("attack_summary")
@dataclass(frozen=True, kw_only=True)
class AttackSummaryRecord(Record):
    """One attack plan's scores over its victims (mean, std, min, max per metric)."""

    plan: str
    attack: str
    view: str
    mask: str | None = None
    ratio: float
    model: str
    batch_size: int
    images: int
    seeds: int
    restarts: int
    dry_run: bool = False
    grid: str | None = None  # PNG of originals and reconstructions
    scores: Mapping[str, Any]  # per metric mean/std/min/max; success: threshold, k, n, rate and its Wilson interval
    dataset: str | None = None
    attacker: str | None = None
    attacker_note: str | None = None
    mask_source: str | None = None
    threat: str | None = None
    local_steps: int | None = None
    local_lr: float | None = None
    clients: int | None = None
    label_source: str | tuple[str, ...] | None = None
    wall_s: float | None = None
    dp: Mapping[str, Any] | None = None  # the configuration's DP: the attack matched each client's noisy upload
    adversary: str | None = None  # the threat model, as on attack records (None: the honest-but-curious aggregator)
    k: int | None = None
    strategy: str | None = None
    obtains: str | None = None
    evidence: str | None = None
    config: str | None = None  # the configuration attacked
    conduit: str | None = None
    detected: str | None = None  # a defence stopped the attack on at least one victim
    dp_bound: Mapping[str, Any] | None = None  # DP rows: the reconstruction bound its noise implies (dp_bound.py)

    @property
    def threat_key(self) -> str:
        """The threat model in one token (``aggregator`` for records written before threat models)."""
        return threat_key(self.adversary, self.k, self.strategy)


@_register("attack_campaign")
@dataclass(frozen=True, kw_only=True)
class AttackCampaignRecord(Record):
    """The close of an attack campaign: how many plans, how long, where the restarts ran."""

    plans: int
    wall_s: float
    workers: int | None = None
    device: str | None = None
    engine: str | None = None  # batched, serial, or both (records before issue #37: serial)
    batch_size: int | None = None  # the largest batch of restarts run together
    restarts: int | None = None  # restarts run (attacks reused across plans counted once)
    restarts_per_s: float | None = None  # restarts over the campaign's wall time
    observations_s: float | None = None  # of wall_s, building the victims' observations on the host
    shared_values: dict[str, int] | None = None  # datasets, uploads and score maps made, and reused across plans


@dataclass(frozen=True, kw_only=True)
class _TextScores(Record):
    """A text attack's scores over its sequences (:mod:`hebench.inversion.scoring.text`)."""

    config: str  # the configuration attacked
    adversary: str  # aggregator, colluding client, one share holder, all share holders
    view: str  # plain, dp, encrypted, selective-global, dp+secagg-sum, model-inconsistency, host-he-colluder, ...
    batch_size: int  # the victim's blocks
    sequences: int  # references scored
    exact: int  # references recovered exactly (same tokens, same order)
    mask_source: str | None = None  # a sensitivity-masked selective view's: sample, local or global
    exact_rate: float | None = None
    exact_low: float | None = None  # Wilson 95 % over sequences
    exact_high: float | None = None
    rouge1_success: int | None = None  # references with ROUGE-1 >= 0.99
    rouge1_success_low: float | None = None
    rouge1_success_high: float | None = None
    rouge1: float | None = None  # means over references
    rouge2: float | None = None
    rougeL: float | None = None
    token_precision: float | None = None
    token_recall: float | None = None


@_register("text_attack")
@dataclass(frozen=True, kw_only=True)
class TextAttackRecord(_TextScores):
    """One text attack on one victim batch of one view: what it recovered against the private token ids."""

    batch: int  # which victim batch
    attack: str  # span or optimisation
    outcome: str  # recovered, partial or failed
    reason: str | None = None  # the typed cause (hebench.inversion.text.result.Why) where not recovered
    why: str = ""  # the numbers behind it, in words
    references: tuple[tuple[int, ...], ...] = ()  # the victim's token ids
    recovered_tokens: tuple[tuple[int, ...], ...] = ()
    recovered: int | None = None  # sequences the attack returned


@_register("text_attack_summary")
@dataclass(frozen=True, kw_only=True)
class TextAttackSummaryRecord(_TextScores):
    """One view of one configuration at one victim batch size, over its victim batches: outcomes, pooled scores
    and a few recovered sequences beside the originals (decoded text)."""

    attack: str = "span"
    length: int | None = None  # tokens per block
    steps: int | None = None  # the victim's local steps
    optimiser: str | None = None
    batches: int = 1
    outcomes: Mapping[str, int] = field(default_factory=dict)  # recovered / partial / failed -> victim batches
    why: str = ""  # the first typed reason and its numbers ("adapter-rank: ...")
    attack_s: float | None = None  # view built and attacked, over its batches
    examples: tuple[Mapping[str, Any], ...] = ()  # {original, recovered, rouge1, exact}


@_register("modelled_cost")
@dataclass(frozen=True, kw_only=True)
class ModelledCostRecord(Record):
    """A configuration's costs as a published linear model predicts them under a TEE: modelled, never measured.

    ``baseline_*`` are this configuration's measured figures (sum over its rounds; CPU without waiting);
    ``modelled_*`` are ``baseline × (1 + Σ coefficients)``. See :mod:`hebench.analysis.tee_model`.
    """

    config: str
    modelled: bool = True
    model: str
    source: str
    fitted_on: str
    coefficients_file: str
    coefficients: Mapping[str, float]
    rounds: int
    baseline_round_wall_s: float
    modelled_round_wall_s: float
    overhead_wall_s: Mapping[str, float]
    baseline_cpu_s: float
    modelled_cpu_s: float


@_register("library_benchmark")
@dataclass(frozen=True, kw_only=True)
class LibraryBenchmarkRecord(Record):
    """One adapter at one vector size from ``compare libraries``."""

    result: Mapping[str, Any]
