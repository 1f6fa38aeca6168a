"""Per-configuration summary of a run's records: the table ``hebench run`` prints and the report shows."""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from hebench.config.steady import cold_rounds, first_rounds, warmup_of_suite
from hebench.protections import AttackerView, KeyHolders, find_mode
from hebench.results.records import (
    ConfigurationRecord,
    KeygenRecord,
    ModelledCostRecord,
    PartyRoundRecord,
    Record,
    RoundRecord,
    RunRecord,
)

PHASES = ("train", "encrypt", "serialize", "send", "wait", "deserialize", "decrypt", "evaluate")
AGG_PHASES = ("receive", "deserialize", "aggregate", "serialize", "send", "wait")
ENGINE_PHASES = ("encrypt", "serialize", "deserialize", "decrypt")
IDLE = ("wait",)  # waiting is idle time, not host work
ENGINE_IDLE = ("wait", "receive")


@dataclass(frozen=True)
class Projection:
    """Engine phase times projected on a calibrated device (per-value costs measured there × values).

    Always labelled projected; never mixed with measured figures.
    """

    device: str | None
    calibrated_at_size: int
    phases_s: Mapping[str, float]
    total_s: float
    projected: bool = True


Spread = tuple[float, float]  # (min, max)


@dataclass(frozen=True)
class SummaryRow:
    """One configuration of a run: means per steady round (per client that uploaded, where it says client).

    Headline costs (CPU, bytes, wall times and their ×raw ratios) leave out the warm-up rounds
    (:mod:`hebench.config.steady`); ``*_rounds`` hold the per-round values they average (for
    significance tests) and ``*_spread`` their (min, max) over steady rounds (and clients). A selected
    client that dropped out before its update reached the aggregator (:mod:`hebench.faults`) is counted in
    ``dropped_clients``, never as a small upload in the per-client figures.
    """

    config: str
    mode: str
    runtime: str
    adapter: str
    packing: str
    params: Mapping[str, Any]
    selective: Mapping[str, Any] | None
    parameters: int
    rounds_done: int
    selective_known: bool = True  # False: its records and its run's suite do not say (see the report's notes)
    dp: Mapping[str, Any] | None = None  # the configuration's DP settings; None: none
    transport: str = "tcp"  # tcp or tls
    tee_modelled: bool = False  # a modelled TEE row: its run is measured, its TEE costs only modelled
    accuracy: float | None = None
    loss: float | None = None
    max_abs_error: float | None = None
    client_cpu_s_per_round: float | None = None
    client_cpu_s_spread: Spread | None = None  # min, max over clients and steady rounds
    selected_clients: int = 0  # client-rounds selected in the steady rounds
    dropped_clients: int = 0  # of those, the ones whose update never reached the aggregator (counted apart)
    steady_rounds: int = 0  # rounds the headline figures average over
    warmup_rounds: int = 0  # completed rounds left out of them
    includes_warmup: bool = False  # True: no steady round yet, so the figures include a first (cold) round
    client_cpu_s_rounds: tuple[float, ...] = ()  # per steady round: mean over training clients (CPU time)
    total_cpu_s_rounds: tuple[float, ...] = ()  # per steady round: host + engine CPU (offload), else host CPU
    upload_bytes_rounds: tuple[float, ...] = ()  # per steady round: mean over training clients
    round_wall_s_rounds: tuple[float, ...] = ()  # per steady round (wall time)
    upload_bytes_spread: Spread | None = None  # min, max over clients and steady rounds
    round_wall_s_spread: Spread | None = None  # min, max over steady rounds
    load_avg_max: float | None = None  # highest 1-minute load average recorded at a round's end
    upload_bytes_per_client_round: float | None = None
    download_bytes_per_client_round: float | None = None
    host_engine_bytes_per_round: float | None = None  # offload
    engine_cpu_s_per_round: float | None = None  # offload
    total_cpu_s_per_round: float | None = None  # host + engine CPU per client (offload); else the host CPU
    total_cpu_s_spread: Spread | None = None  # min, max over clients and steady rounds
    engine_wall_s: Mapping[str, float | None] = field(default_factory=dict)  # offload: per engine phase
    engine_cores: tuple[int, ...] | None = None
    host_cores: tuple[int, ...] | None = None
    round_wall_s: float | None = None
    flower_process_cpu_s_per_round: float | None = None  # Flower: whole ClientApp processes (start-up included)
    flower_round_wall_s: float | None = None  # Flower: includes its polling; never compared with local runs
    aggregator_cpu_s_per_round: float | None = None
    client_wall_s: Mapping[str, float | None] = field(default_factory=dict)
    aggregator_wall_s: Mapping[str, float | None] = field(default_factory=dict)
    peak_rss_bytes: int | None = None
    keygen_s: float | None = None
    cpu_overhead_vs_raw: float | None = None
    total_cpu_overhead_vs_raw: float | None = None  # host + engine CPU against raw's
    bytes_overhead_vs_raw: float | None = None
    round_time_vs_raw: float | None = None
    host_he_twin: str | None = None  # offload: the host-he configuration it is compared with
    round_time_vs_host_he: float | None = None
    host_cpu_saved_vs_host_he: float | None = None  # fraction; negative: offload adds host CPU
    projected_engine_s: Projection | None = None  # offload, with a calibration

    @property
    def is_baseline(self) -> bool:
        """The unprotected row every ratio is taken against (raw: plaintext updates, no DP, TLS or TEE)."""
        spec = find_mode(self.mode)
        return (
            spec is not None
            and spec.plain_adapter
            and spec.attacker_view is AttackerView.FULL_UPDATE
            and self.dp is None
            and self.transport == "tcp"
            and not self.tee_modelled
        )

    @property
    def uses_engines(self) -> bool:
        """Engines, not the client host, hold the keys (offload): compared with its host-he twin."""
        spec = find_mode(self.mode)
        return spec is not None and spec.key_holders is KeyHolders.ENGINES

    @property
    def clients_hold_keys(self) -> bool:
        spec = find_mode(self.mode)
        return spec is not None and spec.key_holders is KeyHolders.CLIENTS

    @property
    def encrypted_fraction(self) -> float:
        """The fraction of parameters encrypted: 0 raw, the mask ratio selective (1 for a layer mask's share
        is unknown here), else 1."""
        if self.is_baseline:
            return 0.0
        sel = self.selective
        if sel and sel.get("mask") != "layers" and sel.get("ratio") is not None:
            return float(sel["ratio"])
        return 1.0

    def twin_key(self) -> tuple[Any, ...]:
        """What an offload row shares with its host-he twin: everything but where the encryption runs."""
        return (self.runtime, self.adapter, _canonical(self.params), self.packing, _canonical(self.selective))

    def to_json(self) -> dict[str, Any]:
        out = {k: getattr(self, k) for k in self.__dataclass_fields__}
        if self.projected_engine_s is not None:
            out["projected_engine_s"] = self.projected_engine_s.__dict__
        return out


def _plain_mode(mode: str) -> bool:
    spec = find_mode(mode)
    return spec is not None and spec.plain_adapter


def _canonical(value: Any) -> Any:
    if isinstance(value, Mapping):
        return tuple(sorted((k, _canonical(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_canonical(v) for v in value)
    return value


def _mean(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.fmean(present) if present else None


def selected(rec: PartyRoundRecord) -> bool:
    """A client selected for the round: it trained, or it left the round (a dropout) before training."""
    return rec.role == "client" and (rec.trained or rec.dropout_phase is not None)


def uploaded(rec: PartyRoundRecord) -> bool:
    """A client whose update reached the aggregator this round: it trained and did not drop out before its
    upload (one that leaves after it, ``after_upload``, is in the aggregate; a ``late`` one is not)."""
    return rec.trained and rec.dropout_phase in (None, "after_upload")


def _engine_cpu(rec: PartyRoundRecord) -> float | None:
    return None if rec.engine is None else rec.engine.phases.cpu_s(exclude=ENGINE_IDLE)


def summarize_run(
    records: Iterable[Record],
    calibration: Mapping[str, Any] | None = None,
    selective: Mapping[str, Mapping[str, Any] | None] | None = None,
) -> list[SummaryRow]:
    """One row per configuration, in run order; overheads are ratios to the ``raw`` row.

    With a calibration (a ``compare libraries --calibration-out`` file), offload rows carry
    engine times projected on the calibrated device. ``selective`` (label → spec) fills in
    configurations whose records did not record their selective settings (early v1 files).
    """
    configs: dict[str, ConfigurationRecord] = {}
    starts: dict[str, set[int]] = defaultdict(set)
    warmup = 1
    rounds: dict[str, dict[int, RoundRecord]] = defaultdict(dict)
    clients: dict[str, list[PartyRoundRecord]] = defaultdict(list)
    aggs: dict[str, list[PartyRoundRecord]] = defaultdict(list)
    keygen: dict[str, KeygenRecord] = {}
    modelled: set[str] = set()  # configurations with a modelled TEE cost (also marked so in older records)
    for rec in records:
        if isinstance(rec, RunRecord):
            warmup = warmup_of_suite(rec.suite)
        elif isinstance(rec, ConfigurationRecord):
            configs[rec.config] = rec
            starts[rec.config].add(rec.start_round)
        elif isinstance(rec, RoundRecord):
            rounds[rec.config][rec.round] = rec  # a resumed run's later record wins
        elif isinstance(rec, PartyRoundRecord) and rec.role == "client":
            clients[rec.config].append(rec)
        elif isinstance(rec, PartyRoundRecord) and rec.role == "aggregator":
            aggs[rec.config].append(rec)
        elif isinstance(rec, KeygenRecord):
            keygen[rec.config] = rec  # the last key epoch
        elif isinstance(rec, ModelledCostRecord):
            modelled.add(rec.config)
    rows = [
        _row(c, rounds[k], _steady(rounds[k], starts[k], warmup), clients[k], aggs[k], keygen.get(k))
        for k, c in configs.items()
    ]
    rows = [_with_selective(row, configs[row.config], selective or {}) for row in rows]
    rows = [replace(row, tee_modelled=True) if row.config in modelled else row for row in rows]
    return _compared(rows, calibration)


@dataclass(frozen=True)
class _Steady:
    rounds: frozenset[int]  # the rounds headline figures use
    excluded: int  # completed warm-up rounds left out
    cold: bool  # the rounds used include a first round after a (re)start


def _steady(done: Mapping[int, RoundRecord], starts: Iterable[int], warmup: int) -> _Steady:
    """The completed rounds past warm-up; all completed rounds (marked cold) when none is."""
    starts = set(starts) or {0}
    warm = {r for r in done if r not in cold_rounds(starts, warmup)}
    if warm:
        return _Steady(frozenset(warm), len(done) - len(warm), bool(warm & first_rounds(starts)))
    return _Steady(frozenset(done), 0, bool(done))


def _spread(values: list[float]) -> Spread | None:
    return (min(values), max(values)) if values else None


def _per_round(recs: Iterable[PartyRoundRecord], value: Any) -> tuple[float, ...]:
    """Per round (in round order): the mean of ``value(rec)`` over that round's records."""
    by_round: dict[int, list[float]] = defaultdict(list)
    for rec in recs:
        v = value(rec)
        if v is not None:
            by_round[rec.round].append(v)
    return tuple(statistics.fmean(by_round[r]) for r in sorted(by_round))


def _row(
    conf: ConfigurationRecord,
    done: dict[int, RoundRecord],
    steady: _Steady,
    all_clients: list[PartyRoundRecord],
    all_aggs: list[PartyRoundRecord],
    keygen: KeygenRecord | None,
) -> SummaryRow:
    last = done[max(done)] if done else None
    clients = [c for c in all_clients if c.round in steady.rounds]
    aggs = [a for a in all_aggs if a.round in steady.rounds]
    picked = [c for c in clients if selected(c)]
    uploaders = [c for c in picked if uploaded(c)]  # per-client costs are over these
    cpu = [c.phases.cpu_s(exclude=IDLE) for c in uploaders]
    spec = find_mode(conf.mode)
    offload = spec is not None and spec.key_holders is KeyHolders.ENGINES
    flower = conf.runtime == "flower"  # the host itself sends the engine's ciphertext through Flower

    def upload(c: PartyRoundRecord) -> float:
        return c.engine.aggregator_bytes_sent if offload and not flower and c.engine else c.bytes_sent

    def total_cpu(c: PartyRoundRecord) -> float:
        return c.phases.cpu_s(exclude=IDLE) + ((_engine_cpu(c) or 0.0) if offload else 0.0)

    totals = [total_cpu(c) for c in uploaders]
    uploads = [upload(c) for c in uploaders]
    walls = [a.round_wall_s for a in aggs if a.round_wall_s is not None]
    loads = [r.load_avg for r in done.values() if r.load_avg is not None]
    host_engine = [c.host_engine_bytes if flower else c.bytes_sent + c.bytes_received for c in uploaders]
    engines = [c.engine for c in uploaders if c.engine is not None]
    return SummaryRow(
        config=conf.config,
        mode=conf.mode,
        runtime=conf.runtime,
        adapter=conf.adapter,
        packing=conf.packing,
        params=conf.params,
        selective=conf.selective,
        parameters=conf.parameters,
        rounds_done=len(done),
        dp=conf.dp,
        transport=conf.transport,
        tee_modelled=conf.tee is not None,
        accuracy=last.accuracy if last else None,
        loss=last.loss if last else None,
        # the steady rounds, as every other column (a first round's error is as telling, but kept apart)
        max_abs_error=max(
            (r.max_abs_error for k, r in done.items() if k in steady.rounds and r.max_abs_error is not None),
            default=None,
        ),
        client_cpu_s_per_round=_mean(cpu),
        client_cpu_s_spread=_spread(cpu),
        selected_clients=len(picked),
        dropped_clients=len(picked) - len(uploaders),
        steady_rounds=len(steady.rounds),
        warmup_rounds=steady.excluded,
        includes_warmup=steady.cold,
        client_cpu_s_rounds=_per_round(uploaders, lambda c: c.phases.cpu_s(exclude=IDLE)),
        total_cpu_s_rounds=_per_round(uploaders, total_cpu),
        total_cpu_s_per_round=_mean(totals),
        total_cpu_s_spread=_spread(totals),
        upload_bytes_rounds=_per_round(uploaders, upload),
        round_wall_s_rounds=_per_round(aggs, lambda a: a.round_wall_s),
        upload_bytes_spread=_spread(uploads),
        round_wall_s_spread=_spread(walls),
        load_avg_max=max(loads, default=None),
        upload_bytes_per_client_round=_mean(uploads),
        download_bytes_per_client_round=_mean(c.bytes_received for c in uploaders),
        host_engine_bytes_per_round=_mean(host_engine) if offload else None,
        engine_cpu_s_per_round=_mean(_engine_cpu(c) for c in uploaders) if offload else None,
        engine_wall_s={ph: _mean(e.phases.wall_s(ph) for e in engines) for ph in ENGINE_PHASES} if offload else {},
        engine_cores=engines[0].cores if offload and engines else None,
        host_cores=uploaders[0].affinity if uploaders else None,
        round_wall_s=_mean(a.round_wall_s for a in aggs),
        flower_process_cpu_s_per_round=_mean(c.process_cpu_s for c in uploaders),
        flower_round_wall_s=_mean(a.flower_round_wall_s for a in aggs),
        aggregator_cpu_s_per_round=_mean(a.phases.cpu_s(exclude=("wait", "receive")) for a in aggs),
        client_wall_s={ph: _mean(c.phases.wall_s(ph) for c in uploaders) for ph in PHASES},
        aggregator_wall_s={ph: _mean(a.phases.wall_s(ph) for a in aggs) for ph in AGG_PHASES},
        peak_rss_bytes=max((c.peak_rss_bytes for c in all_clients if c.peak_rss_bytes is not None), default=None),
        keygen_s=keygen.phases.wall_s("keygen") if keygen else None,
    )


def _with_selective(
    row: SummaryRow, conf: ConfigurationRecord, specs: Mapping[str, Mapping[str, Any] | None]
) -> SummaryRow:
    if conf.selective_recorded or _plain_mode(conf.mode):
        return row
    if row.config in specs:
        return replace(row, selective=specs[row.config])
    return replace(row, selective_known=False)


def _compared(rows: list[SummaryRow], calibration: Mapping[str, Any] | None) -> list[SummaryRow]:
    """Rows with their ratios to raw and, for offload, to their host-he twin."""
    raw = next((r for r in rows if r.is_baseline), None)
    out = []
    for row in rows:
        extra: dict[str, Any] = {
            "cpu_overhead_vs_raw": _ratio(row, raw, "client_cpu_s_per_round"),
            "total_cpu_overhead_vs_raw": _ratio(row, raw, "total_cpu_s_per_round"),
            "bytes_overhead_vs_raw": _ratio(row, raw, "upload_bytes_per_client_round"),
            "round_time_vs_raw": _ratio(row, raw, "round_wall_s"),
        }
        if row.uses_engines:
            twin = host_he_twin(row, rows)
            saved = _ratio(row, twin, "client_cpu_s_per_round")
            extra.update(
                host_he_twin=twin.config if twin else None,
                round_time_vs_host_he=_ratio(row, twin, "round_wall_s"),
                host_cpu_saved_vs_host_he=None if saved is None else 1.0 - saved,
                projected_engine_s=project(calibration, row.adapter, row.parameters) if calibration else None,
            )
        out.append(replace(row, **extra))
    return out


def host_he_twin(row: SummaryRow, rows: Iterable[SummaryRow]) -> SummaryRow | None:
    """The host-he row with the same runtime, adapter, parameters, packing and selective settings."""
    return next((r for r in rows if r.clients_hold_keys and r.twin_key() == row.twin_key()), None)


def project(calibration: Mapping[str, Any], adapter: str, values: int) -> Projection | None:
    """Engine phase times for ``values`` values on the calibrated device, from its closest calibrated size."""
    sizes = calibration.get("adapters", {}).get(adapter)
    if not sizes or not values:
        return None
    size = min(sizes, key=lambda s: abs(int(s) - values))
    ops = sizes[size]["operations"]
    phases = {ph: ops[ph]["wall_s_per_value"] * values for ph in ENGINE_PHASES if ph in ops}
    return Projection(
        device=calibration.get("environment", {}).get("cpu_model"),
        calibrated_at_size=int(size),
        phases_s=phases,
        total_s=sum(phases.values()),
    )


def _ratio(row: SummaryRow, base: SummaryRow | None, key: str) -> float | None:
    if base is None or not getattr(row, key) or not getattr(base, key):
        return None
    return getattr(row, key) / getattr(base, key)
